package demo

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/tool/bench"
)

// fakeSecond returns second n with the given hot acceptances and background outcome.
func fakeSecond(n int, hotOffered, hotAccepted, bgRejected int64, bgP99 float64) second {
	return second{
		N: n,
		Hot: &bench.Summary{Offered: hotOffered, Accepted: hotAccepted,
			RejectedByCoordinator: hotOffered - hotAccepted, Errors: map[string]int64{}},
		Background: &bench.Summary{Offered: 300, Accepted: 300 - bgRejected, RejectedByReplicas: bgRejected,
			Errors: map[string]int64{}, LatencyMS: bench.Latency{P50: 1, P99: bgP99}},
	}
}

func TestSumTakesTheSteadyRateFromTheSecondHalf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		accepted []int64 // hot accepted per second
		want     float64
		seconds  int
	}{
		{"one second", []int64{250}, 250, 1},
		{"two seconds", []int64{250, 120}, 120, 1},
		{"three seconds", []int64{250, 120, 100}, 110, 2},
		{"four seconds", []int64{250, 150, 110, 90}, 100, 2},
	} {
		var secs []second
		for i, a := range tc.accepted {
			secs = append(secs, fakeSecond(i+1, 500, a, 0, 2))
		}
		got := sum(secs)
		if got.hotSteadyRate() != tc.want || got.steadySeconds != tc.seconds {
			t.Errorf("%s: accepted %v gives a steady rate of %.1f/s over %d seconds, want %.1f/s over %d",
				tc.name, tc.accepted, got.hotSteadyRate(), got.steadySeconds, tc.want, tc.seconds)
		}
	}
}

func TestSumSkipsSkippedSeconds(t *testing.T) {
	secs := []second{fakeSecond(1, 500, 300, 0, 2), {N: 2}, fakeSecond(3, 500, 100, 0, 4)}
	got := sum(secs)
	if got.ran != 2 || got.hotOffered != 1000 || got.hotAccepted != 400 || got.hotSteady != 100 {
		t.Errorf("sum with second 2 skipped = ran %d, hot offered %d, accepted %d, steady %d; want 2, 1000, 400, 100",
			got.ran, got.hotOffered, got.hotAccepted, got.hotSteady)
	}
}

func TestWriteReading(t *testing.T) {
	steady := []int64{250, 100, 95, 105}     // held to the limit of 100/s after warm-up
	overshoot := []int64{340, 200, 170, 180} // 175/s: coordinators that do not share their counts
	for _, tc := range []struct {
		name       string
		coord      bench.Coordinator
		hotRate    int     // 0 means the default
		accepted   []int64 // hot accepted per second
		bgRejected int64   // per second
		want       []string
		wantNot    []string
	}{
		{
			name:     "held to the limit, quiet background",
			coord:    bench.RoundRobin,
			accepted: steady,
			want: []string{
				"hot partition: offered 2000, accepted 550 (137.5/s), rejected 1450 by the limiter",
				"rejected 0 (none, as it should be",
				"over the last 2 seconds the hot partition was held to about 100/s (limit 100/s,",
				"offered 500/s); background traffic saw no rejections, with p99 5.0 ms in the median\nsecond and 9.0 ms in the worst.",
			},
			wantNot: []string{"well over the limit", "errors other than"},
		},
		{
			name:       "background rejected",
			coord:      bench.RoundRobin,
			accepted:   steady,
			bgRejected: 3,
			want:       []string{"background traffic saw 12 rejections"},
			wantNot:    []string{"no rejections", "as it should be"},
		},
		{
			name:     "round robin well over the limit",
			coord:    bench.RoundRobin,
			accepted: overshoot,
			want:     []string{"held to about 175/s", "well over the limit", "compare --coordinator fixed"},
		},
		{
			name:     "one coordinator over the limit",
			coord:    bench.Fixed,
			accepted: overshoot,
			want:     []string{"held to about 175/s"},
			wantNot:  []string{"well over the limit"},
		},
		{
			name:     "hot partition under its limit",
			coord:    bench.RoundRobin,
			hotRate:  80,
			accepted: []int64{80, 80, 80, 80},
			want:     []string{"the hot partition stayed within its limit at about 80/s (limit 100/s,\noffered 80/s)"},
			wantNot:  []string{"held to"},
		},
	} {
		p99 := []float64{9, 3, 4, 5}
		var secs []second
		for i, a := range tc.accepted {
			secs = append(secs, fakeSecond(i+1, 500, a, tc.bgRejected, p99[i]))
		}
		cfg := DefaultConfig()
		cfg.Coordinator = tc.coord
		if tc.hotRate != 0 {
			cfg.HotRate = tc.hotRate
		}
		var out bytes.Buffer
		writeReading(&out, cfg, secs)
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: the reading\n%s\nlacks %q", tc.name, out.String(), w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(out.String(), w) {
				t.Errorf("%s: the reading\n%s\nsays %q, want it not to", tc.name, out.String(), w)
			}
		}
	}
}

func TestWriteReadingListsErrors(t *testing.T) {
	s := fakeSecond(1, 500, 100, 0, 2)
	s.Hot.Errors[bench.ErrorTimeout] = 2
	s.Background.Errors[bench.ErrorDropped] = 5
	var out bytes.Buffer
	writeReading(&out, DefaultConfig(), []second{s})
	if want := "errors other than rate limits: background dropped 5, hot timeout 2"; !strings.Contains(out.String(), want) {
		t.Errorf("the reading\n%s\nlacks %q", out.String(), want)
	}
}

// columns matches a table cell: words separated by single spaces ("p50 ms" is one cell).
var columns = regexp.MustCompile(`\S+(?: \S+)*`)

func TestRowsLineUpUnderTheHeader(t *testing.T) {
	var out bytes.Buffer
	writeHeader(&out)
	// The widest values the flags allow: rates of 50000/s, a limit of 1000000/s, and latencies
	// up to the read timeout.
	s := fakeSecond(12, MaxHotRate, 12345, 0, 5000.123)
	s.Background.Offered, s.Background.Accepted = MaxBackgroundRate, MaxBackgroundRate
	writeRow(&out, MaxLimit, s)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("header and one row printed %d lines, want 3:\n%s", len(lines), out.String())
	}
	head := columns.FindAllStringIndex(lines[1], -1)
	row := columns.FindAllStringIndex(lines[2], -1)
	if len(head) != len(row) {
		t.Fatalf("the header has %d columns and the row %d:\n%s", len(head), len(row), out.String())
	}
	for i := range head {
		if head[i][1] != row[i][1] {
			t.Errorf("column %d: the header name ends at %d, the row's value at %d:\n%s", i+1, head[i][1], row[i][1], out.String())
		}
	}
	for _, label := range []string{"hot partition", "background"} {
		if !strings.Contains(lines[0], label) {
			t.Errorf("the first header line %q lacks %q", lines[0], label)
		}
	}
}
