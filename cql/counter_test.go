package cql

import "testing"

func TestCounterBatch(t *testing.T) {
	src := "BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1; UPDATE t SET c = c - ? WHERE k = 2; APPLY BATCH"
	sts, err := Parse(src)
	if err != nil || len(sts) != 1 {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	st := sts[0]
	b, ok := st.(*BatchStmt)
	if !ok || !b.Counter || b.Unlogged || len(b.Statements) != 2 {
		t.Fatalf("Parse(%q) = %#v, want a COUNTER batch of 2 statements", src, st)
	}
	out := Format(b)
	again, err := Parse(out)
	if err != nil || len(again) != 1 || !again[0].(*BatchStmt).Counter {
		t.Errorf("Format = %q, which parses to %v (err %v): COUNTER lost", out, again, err)
	}
}
