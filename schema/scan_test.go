package schema

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cql"
)

func TestBindScanTokenRanges(t *testing.T) {
	s := mustBuild(t, dataDDL)
	const minT, maxT = math.MinInt64, math.MaxInt64
	for _, tt := range []struct {
		src    string
		values []BindValue
		want   TokenRange
	}{
		{src: "SELECT * FROM kv", want: FullRing},
		{src: "SELECT * FROM kv LIMIT 3 ALLOW FILTERING", want: FullRing},
		{src: "SELECT v FROM kv WHERE token(k) > 10", want: TokenRange{Start: 10, End: maxT}},
		{src: "SELECT v FROM kv WHERE token(k) >= 10", want: TokenRange{Start: 9, End: maxT}},
		{src: "SELECT v FROM kv WHERE token(k) < 10", want: TokenRange{Start: minT, End: 9}},
		{src: "SELECT v FROM kv WHERE token(k) <= 10 AND token(k) > -3", want: TokenRange{Start: -3, End: 10}},
		{src: "SELECT v FROM kv WHERE token(k) = 10", want: TokenRange{Start: 9, End: 10}},
		{src: "SELECT v FROM kv WHERE token(k) >= -9223372036854775808", want: FullRing},
		{src: "SELECT v FROM kv WHERE token(k) < -9223372036854775808", want: TokenRange{Start: minT, End: maxT, Empty: true}},
		{src: "SELECT v FROM kv WHERE token(k) > 5 AND token(k) <= 5", want: TokenRange{Start: 5, End: 5, Empty: true}},
		{src: "SELECT v FROM kv WHERE token(k) > 7 AND token(k) <= 2", want: TokenRange{Start: 7, End: 2, Empty: true}},
		{src: "SELECT * FROM t WHERE token(a, b) > ? AND token(a, b) <= ?",
			values: []BindValue{{Bytes: EncodeBigInt(-100)}, {Bytes: EncodeBigInt(100)}}, want: TokenRange{Start: -100, End: 100}},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		r, err := s.BindReadAt(st.(*cql.SelectStmt), "ks", tt.values, time.Time{})
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !r.Scan || r.Tokens != tt.want || r.PartitionKey != nil {
			t.Errorf("%s: scan %v tokens %+v, want a scan of %+v", tt.src, r.Scan, r.Tokens, tt.want)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"SELECT * FROM t WHERE token(a) > 0", "the token() function must be applied to all partition key components or none of them: token(a, b)"},
		{"SELECT * FROM t WHERE token(b, a) > 0", "the token function arguments must be in the partition key order: a, b"},
		{"SELECT * FROM t WHERE token(a, x) > 0", "unknown column x in table ks.t"},
		{"SELECT * FROM kv WHERE token(k) > 0 AND token(k) >= 1", "more than one restriction was found for the start bound of token(k)"},
		{"SELECT * FROM kv WHERE token(k) > 0 AND k = 'a'", "partition key column k cannot be restricted by both a normal relation and a token relation"},
		{"SELECT * FROM kv WHERE token(k) > 'a'", "column \"partition key token\" is bigint; cannot assign"},
		{"SELECT * FROM t WHERE c1 = 1", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		{"SELECT * FROM t WHERE token(a, b) > 0 AND c1 = null ALLOW FILTERING", "c1"},
		{"SELECT * FROM t ORDER BY c1 DESC", "ORDER BY is only supported when the partition key is restricted by an EQ or an IN"},
		{"UPDATE kv SET v = 1 WHERE token(k) > 0", "token() restrictions are only supported in SELECT, not in UPDATE"},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if sel, ok := st.(*cql.SelectStmt); ok {
			_, err = s.PrepareRead(sel, "ks")
		} else {
			_, err = s.PrepareWrite(st, "ks")
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n  gave error %v\n  want %q", tt.src, err, tt.want)
		}
	}
	st, _ := cql.ParseStatement("SELECT * FROM t WHERE token(a, b) > ? AND token(a, b) <= :hi LIMIT ?")
	vars, pk, err := s.Variables(st, "ks")
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 3 || vars[0].Name != "partition key token" || vars[0].Type != TypeBigInt || vars[1].Name != "hi" || vars[2].Name != "[limit]" || pk != nil {
		t.Errorf("Variables of a token range scan = %+v (pk %v), want the partition key token twice (bigint) then [limit]", vars, pk)
	}
}
