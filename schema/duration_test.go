package schema

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"testing/quick"

	"github.com/kvnode/kvnode/cql"
)

func TestParseDuration(t *testing.T) {
	const h, m, s = nanosPerHour, nanosPerMinute, nanosPerSecond
	tests := []struct {
		in   string
		want Duration
	}{
		{"1h30m", Duration{0, 0, h + 30*m}},
		{"1H30M", Duration{0, 0, h + 30*m}},
		{"-1h30m", Duration{0, 0, -(h + 30*m)}},
		{"1y2mo3w4d5h6m7s8ms9us10ns", Duration{14, 25, 5*h + 6*m + 7*s + 8*nanosPerMilli + 9*nanosPerMicro + 10}},
		{"12µs", Duration{0, 0, 12 * nanosPerMicro}},
		{"0s", Duration{}},
		{"P1DT2H", Duration{0, 1, 2 * h}},
		{"P1Y2M3DT4H5M6S", Duration{14, 3, 4*h + 5*m + 6*s}},
		{"PT90M", Duration{0, 0, 90 * m}},
		{"P2M", Duration{2, 0, 0}},
		{"-P1D", Duration{0, -1, 0}},
		{"P3W", Duration{0, 21, 0}},
		{"P0001-02-03T04:05:06", Duration{14, 3, 4*h + 5*m + 6*s}},
		{"-P0000-00-01T00:00:00", Duration{0, -1, 0}},
		{"2147483647mo", Duration{math.MaxInt32, 0, 0}},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", "not a duration"},
		{"-", "not a duration"},
		{"1x", "not a duration"},
		{"h", "not a duration"},
		{"1h1h", "the hours are specified multiple times"},
		{"1m1h", "the hours should be before the minutes"},
		{"2147483648mo", "months must be less than or equal to 2147483647"},
		{"178956971y", "months must be less than or equal to"},
		{"2147483648d", "days must be less than or equal to"},
		{"9223372036854775808ns", "nanoseconds must be less than or equal to"},
		{"3000000h", "nanoseconds must be less than or equal to"},
		{"P", "not a duration"},
		{"PT", "not a duration"},
		{"P1H", "not a duration"},
		{"PT1D", "not a duration"},
		{"P1D1Y", "not a duration"},
		{"P1W2D", "not a duration"},
		{"P0001-02-03", "not a duration"},
	}
	for _, tt := range bad {
		if _, err := ParseDuration(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "invalid duration") {
			t.Errorf("ParseDuration(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		d    Duration
		want string
	}{
		{Duration{}, ""},
		{Duration{0, 0, nanosPerHour + 30*nanosPerMinute}, "1h30m"},
		{Duration{14, 25, 5*nanosPerHour + 10}, "1y2mo25d5h10ns"},
		{Duration{-13, -1, -nanosPerMilli}, "-1y1mo1d1ms"},
		{Duration{math.MinInt32, 0, math.MinInt64}, "-178956970y8mo2562047h47m16s854ms775us808ns"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.d, got, tt.want)
		}
		if tt.want == "" || tt.d.Months == math.MinInt32 {
			continue
		}
		if back, err := ParseDuration(tt.want); err != nil || back != tt.d {
			t.Errorf("ParseDuration(%q) = %+v, %v, want %+v", tt.want, back, err, tt.d)
		}
	}
}

// TestDurationEncoding checks the vint triple against bytes Cassandra writes, and that every
// duration of one sign round-trips through Check and Decode.
func TestDurationEncoding(t *testing.T) {
	tests := []struct {
		d    Duration
		want []byte
	}{
		{Duration{}, []byte{0, 0, 0}},
		{Duration{1, 2, 3}, []byte{2, 4, 6}},
		{Duration{-1, -2, -3}, []byte{1, 3, 5}},
		// 1h = 3.6e12 ns, zigzag 7.2e12 = 0x68C_6171_4000: 43 bits, 6 extra bytes.
		{Duration{0, 0, nanosPerHour}, []byte{0, 0, 0xFC, 0x06, 0x8C, 0x61, 0x71, 0x40, 0x00}},
		{Duration{0, 64, 0}, []byte{0, 0x80, 0x80, 0}},
		{Duration{0, 0, math.MaxInt64}, []byte{0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}},
	}
	for _, tt := range tests {
		b := EncodeDuration(tt.d)
		if !bytes.Equal(b, tt.want) {
			t.Errorf("EncodeDuration(%+v) = % x, want % x", tt.d, b, tt.want)
		}
		if v, err := TypeDuration.Decode(b); err != nil || v != tt.d {
			t.Errorf("Decode(% x) = %v, %v, want %+v", b, v, err, tt.d)
		}
	}
	roundTrip := func(m, d int32, ns int64) bool {
		if m < 0 || d < 0 || ns < 0 {
			m, d, ns = -abs32(m), -abs32(d), -absI(ns)
		}
		want := Duration{m, d, ns}
		v, err := TypeDuration.Decode(EncodeDuration(want))
		return err == nil && v == want
	}
	if err := quick.Check(roundTrip, nil); err != nil {
		t.Error(err)
	}
	bad := []struct {
		b    []byte
		want string
	}{
		{[]byte{}, "months: truncated vint"},
		{[]byte{0, 0}, "nanoseconds: truncated vint"},
		{[]byte{0, 0, 0xC0, 1}, "nanoseconds: truncated vint: 2 bytes, want 3"},
		{[]byte{0, 0, 0, 0}, "1 bytes after the nanoseconds"},
		{[]byte{0x80, 0x02, 0, 0}, "months: vint not in its fewest bytes"},
		{[]byte{2, 1, 0}, "not all of the same sign"},
		{[]byte{0xF1, 0, 0, 0, 0, 0, 0}, "outside int range"},
	}
	for _, tt := range bad {
		if err := TypeDuration.Check(tt.b); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(% x) = %v, want an error containing %q", tt.b, err, tt.want)
		}
	}
}

func abs32(n int32) int32 {
	if n < 0 {
		if n == math.MinInt32 {
			return math.MaxInt32
		}
		return -n
	}
	return n
}

func absI(n int64) int64 {
	if n < 0 {
		if n == math.MinInt64 {
			return math.MaxInt64
		}
		return -n
	}
	return n
}

func TestDurationColumn(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, d duration)")
	tab := table(t, s, "t")
	c := tab.Columns[1]
	if c.Type != TypeDuration || c.Type.String() != "duration" {
		t.Fatalf("column d has type %v", c.Type)
	}
	value := func(lit string) ([]byte, error) {
		st, err := cql.ParseStatement("INSERT INTO ks.t (k, d) VALUES (1, " + lit + ")")
		if err != nil {
			return nil, err
		}
		return c.Value(st.(*cql.InsertStmt).Values[1])
	}
	for _, tt := range []struct {
		lit  string
		want Duration
	}{
		{"1h30m", Duration{0, 0, nanosPerHour + 30*nanosPerMinute}},
		{"-2d", Duration{0, -2, 0}},
		{"P1DT2H", Duration{0, 1, 2 * nanosPerHour}},
		{"-P3W", Duration{0, -21, 0}},
	} {
		b, err := value(tt.lit)
		if err != nil {
			t.Errorf("%s: %v", tt.lit, err)
			continue
		}
		if v, _ := TypeDuration.Decode(b); v != tt.want {
			t.Errorf("%s = %+v, want %+v", tt.lit, v, tt.want)
		}
	}
	for lit, want := range map[string]string{
		"'1h'":  "column d is duration; cannot assign string literal '1h'",
		"5":     "column d is duration; cannot assign integer literal 5",
		"1m1h":  `column d: invalid duration "1m1h": the hours should be before the minutes`,
		"P1D1Y": `column d: invalid duration "P1D1Y": not a duration (examples: 1h30m, 2d, P1DT2H, -3mo)`,
	} {
		if _, err := value(lit); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", lit, err, want)
		}
	}
	for _, ddl := range []string{
		"CREATE TABLE ks.u (d duration PRIMARY KEY, v int)",
		"CREATE TABLE ks.u (k int, d duration, PRIMARY KEY (k, d))",
		"CREATE TABLE ks.u (k int, d duration, PRIMARY KEY ((k, d)))",
	} {
		_, err := Build(ksDDL + ddl)
		if err == nil || !strings.Contains(err.Error(), `duration type is not supported for PRIMARY KEY column 'd'`) {
			t.Errorf("%s: %v, want the PRIMARY KEY refusal", ddl, err)
		}
	}
	if fs := tab.TypesFormatFeatures(); len(fs) != 1 || fs[0] != "column d of type duration" {
		t.Errorf("TypesFormatFeatures = %q", fs)
	}
	if fs := table(t, mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, d time)"), "t").TypesFormatFeatures(); len(fs) != 0 {
		t.Errorf("TypesFormatFeatures of a table without new types = %q", fs)
	}
	back, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if bt := table(t, back, "t"); bt.Columns[1].Type != TypeDuration {
		t.Errorf("the decoded table's column d is %v", bt.Columns[1].Type)
	}
}

func TestParametricColumns(t *testing.T) {
	s := mustBuild(t, ksDDL+`CREATE TABLE ks.p (k frozen<list<int>>, c tuple<int, text>, c2 frozen<set<text>>,
		m frozen<map<text, frozen<list<int>>>>, d frozen<list<duration>>, PRIMARY KEY (k, c, c2)) WITH CLUSTERING ORDER BY (c DESC, c2 ASC)`)
	tab := table(t, s, "p")
	want := map[string]Type{
		"k": "frozen<list<int>>", "c": "frozen<tuple<int, text>>", "c2": "frozen<set<text>>",
		"m": "frozen<map<text, frozen<list<int>>>>", "d": "frozen<list<duration>>",
	}
	for name, typ := range want {
		if c, ok := tab.Column(name); !ok || c.Type != typ {
			t.Errorf("column %s is %v, want %s", name, c.Type, typ)
		}
	}
	back, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got := table(t, back, "p").CreateStatement(); got != tab.CreateStatement() {
		t.Errorf("after the schema's encoding the table is\n%s\nwant\n%s", got, tab.CreateStatement())
	}
	if fs := tab.TypesFormatFeatures(); len(fs) != 5 {
		t.Errorf("TypesFormatFeatures = %q, want the five new-typed columns", fs)
	}
	for _, want := range []string{"k frozen<list<int>>", "c frozen<tuple<int, text>>", "m frozen<map<text, frozen<list<int>>>>", "c DESC"} {
		if !strings.Contains(tab.CreateStatement(), want) {
			t.Errorf("CREATE statement lacks %q:\n%s", want, tab.CreateStatement())
		}
	}
	_, err = Build(ksDDL + "CREATE TABLE ks.u (k int, d frozen<map<int, duration>>, PRIMARY KEY (k, d))")
	if err == nil || !strings.Contains(err.Error(), "duration type is not supported for PRIMARY KEY column 'd'") {
		t.Errorf("a clustering column holding a duration: %v, want the PRIMARY KEY refusal", err)
	}
}
