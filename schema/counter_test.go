package schema

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

const counterDDL = ksDDL + `
CREATE TABLE ks.ctr (k int, c text, hits counter, misses counter, PRIMARY KEY (k, c));
CREATE TABLE ks.plain (k int PRIMARY KEY, v int);
`

func TestCounterTableRefusals(t *testing.T) {
	s := mustBuild(t, counterDDL)
	for _, tt := range []struct{ ddl, want string }{
		{"CREATE TABLE t (k int PRIMARY KEY, c counter, v int)", "Cannot mix counter and non counter columns in the same table"},
		{"CREATE TABLE t (k int PRIMARY KEY, c counter, s set<text>)", "Cannot mix counter and non counter columns in the same table"},
		{"CREATE TABLE t (a counter, b int, c counter, PRIMARY KEY (b, a))", "counter type is not supported for PRIMARY KEY column 'a'"},
		{"CREATE TABLE t (a counter PRIMARY KEY, c counter)", "counter type is not supported for PRIMARY KEY column 'a'"},
		{"CREATE TABLE t (k int PRIMARY KEY, l list<counter>)", "Counters are not allowed inside collections: list<counter>"},
		{"CREATE TABLE t (k int PRIMARY KEY, m map<text, counter>)", "Counters are not allowed inside collections: map<counter>"},
		{"CREATE TABLE t (k int PRIMARY KEY, u frozen<tuple<int, counter>>)", "Counters are not allowed inside tuples"},
		{"CREATE TABLE t (k int PRIMARY KEY, c counter) WITH default_time_to_live = 10", "Cannot set default_time_to_live on a table with counters"},
		{"ALTER TABLE ctr ADD t text", `Cannot have a non counter column ("t") in a counter table`},
		{"ALTER TABLE plain ADD c counter", `Cannot have a counter column ("c") in a non counter table`},
		{"ALTER TABLE ctr WITH default_time_to_live = 5", "Cannot set default_time_to_live on a table with counters"},
		{"TRUNCATE ctr", "TRUNCATE of a counter table is not supported"},
	} {
		_, err := apply(s, tt.ddl, 20)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.ddl, err, tt.want)
		}
	}
	for _, ok := range []string{
		"CREATE TABLE t2 (k int PRIMARY KEY, a counter, b counter)",
		"ALTER TABLE ctr ADD more counter",
		"ALTER TABLE ctr DROP misses",
	} {
		if _, err := apply(s, ok, 20); err != nil {
			t.Errorf("%s: %v, want it accepted", ok, err)
		}
	}
	s2, err := apply(s, "ALTER TABLE ctr DROP misses", 21)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply(s2, "ALTER TABLE ctr ADD misses counter", 22); err == nil || !strings.Contains(err.Error(), "Cannot re-add previously dropped counter column misses") {
		t.Errorf("re-adding a dropped counter column: %v, want Cassandra's refusal", err)
	}
	ctr := table(t, s, "ctr")
	if !ctr.IsCounter() || table(t, s, "plain").IsCounter() {
		t.Errorf("IsCounter: ctr %v, plain %v; want true, false", ctr.IsCounter(), table(t, s, "plain").IsCounter())
	}
	what, needs := s.FormatNeeds("ks", "ctr")
	found := false
	for _, n := range needs {
		found = found || n.Format == FormatCounters && strings.Contains(n.Feature, "hits")
	}
	if !found {
		t.Errorf("FormatNeeds(ks.ctr) = %s %v, want counter column hits at format %d", what, needs, FormatCounters)
	}
}

func TestCounterWrites(t *testing.T) {
	s := mustBuild(t, counterDDL)
	for _, tt := range []struct {
		src    string
		values []BindValue
		want   string // hits and misses increments, or the error
	}{
		{src: "UPDATE ctr SET hits = hits + 5 WHERE k = 1 AND c = 'a'", want: "hits+5"},
		{src: "UPDATE ctr SET hits = hits - 5, misses = misses + 1 WHERE k = 1 AND c = 'a'", want: "hits+-5 misses+1"},
		{src: "UPDATE ctr SET hits = hits + ? WHERE k = 1 AND c = 'a'", values: []BindValue{{Bytes: EncodeBigInt(7)}}, want: "hits+7"},
		{src: "UPDATE ctr SET hits = hits - ? WHERE k = 1 AND c = 'a'", values: []BindValue{{Bytes: EncodeBigInt(-7)}}, want: "hits+7"},
		{src: "UPDATE ctr SET hits = hits + ? WHERE k = 1 AND c = 'a'", values: []BindValue{{Unset: true}}, want: ""},
		{src: "UPDATE ctr SET hits = hits + ? WHERE k = 1 AND c = 'a'", values: []BindValue{{}}, want: "Invalid null value for counter increment"},
		{src: "UPDATE ctr SET hits = hits - -9223372036854775808 WHERE k = 1 AND c = 'a'", want: "overflows supported counter precision"},
		{src: "UPDATE ctr SET hits = 5 WHERE k = 1 AND c = 'a'", want: "Cannot set the value of counter column hits (counters can only be incremented/decremented, not set)"},
		{src: "UPDATE ctr SET hits = 1 + hits WHERE k = 1 AND c = 'a'", want: "invalid operation (hits = 1 + hits) for non list column hits"},
		{src: "UPDATE ctr USING TTL 10 SET hits = hits + 1 WHERE k = 1 AND c = 'a'", want: "Cannot provide custom TTL for counter updates"},
		{src: "UPDATE ctr USING TIMESTAMP 10 SET hits = hits + 1 WHERE k = 1 AND c = 'a'", want: "Cannot provide custom timestamp for counter updates"},
		{src: "DELETE FROM ctr USING TIMESTAMP 10 WHERE k = 1", want: "Cannot provide custom timestamp for counter updates"},
		{src: "INSERT INTO ctr (k, c, hits) VALUES (1, 'a', 1)", want: "INSERT statements are not allowed on counter tables, use UPDATE instead"},
		{src: "UPDATE plain SET v = v + 1 WHERE k = 1", want: "invalid operation (v = v + 1) for non counter column v"},
		{src: "DELETE hits FROM ctr WHERE k = 1 AND c = 'a'", want: "hits=null"},
		{src: "DELETE FROM ctr WHERE k = 1", want: ""},
	} {
		w, err := bindWrite(t, s, tt.src, tt.values...)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		default:
			var parts []string
			for _, c := range w.Cells {
				if c.Value == nil {
					parts = append(parts, c.Column.Name+"=null")
					continue
				}
				n, _ := TypeCounter.Decode(c.Value)
				parts = append(parts, c.Column.Name+"+"+strconv.FormatInt(n.(int64), 10))
			}
			got = strings.Join(parts, " ")
		}
		if !strings.Contains(got, tt.want) || (tt.want == "" && got != "") {
			t.Errorf("%s: got %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestCounterBatches(t *testing.T) {
	s := mustBuild(t, counterDDL)
	for _, tt := range []struct{ src, want string }{
		{"BEGIN COUNTER BATCH UPDATE ctr SET hits = hits + 1 WHERE k = 1 AND c = 'a'; UPDATE ctr SET misses = misses + 1 WHERE k = 2 AND c = 'b'; APPLY BATCH", ""},
		{"BEGIN UNLOGGED BATCH UPDATE ctr SET hits = hits + 1 WHERE k = 1 AND c = 'a'; APPLY BATCH", ""},
		{"BEGIN COUNTER BATCH UPDATE plain SET v = 1 WHERE k = 1; APPLY BATCH", "Cannot include non-counter statement in a counter batch"},
		{"BEGIN BATCH UPDATE ctr SET hits = hits + 1 WHERE k = 1 AND c = 'a'; APPLY BATCH", "Cannot include a counter statement in a logged batch"},
		{"BEGIN UNLOGGED BATCH UPDATE ctr SET hits = hits + 1 WHERE k = 1 AND c = 'a'; UPDATE plain SET v = 1 WHERE k = 1; APPLY BATCH", "Counter and non-counter mutations cannot exist in the same batch"},
		{"BEGIN COUNTER BATCH USING TIMESTAMP 5 UPDATE ctr SET hits = hits + 1 WHERE k = 1 AND c = 'a'; APPLY BATCH", "Cannot provide custom timestamp for a BATCH containing counters"},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("parse %s: %v", tt.src, err)
		}
		b, err := s.BindBatch(st.(*cql.BatchStmt), "ks", nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tt.src, err)
		case tt.want == "" && !b.Counter:
			t.Errorf("%s: Batch.Counter = false, want true", tt.src)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.src, err, tt.want)
		}
	}
}

func TestCounterSelectors(t *testing.T) {
	s := mustBuild(t, counterDDL)
	for _, src := range []string{"SELECT writetime(hits) FROM ctr WHERE k = 1", "SELECT ttl(hits) FROM ctr WHERE k = 1"} {
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.PrepareRead(st.(*cql.SelectStmt), "ks")
		if err == nil || !strings.Contains(err.Error(), "on counter column hits") {
			t.Errorf("%s: %v, want Cassandra's refusal of selection functions on counters", src, err)
		}
	}
}
