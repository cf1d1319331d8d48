package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// docTable is one table of docs/accuracy.md, made from the rows of the results file.
type docTable struct {
	name string
	make func(rows []Row) (string, error)
}

// docTables are the tables docs/accuracy.md shows, by the name of their markers.
var docTables = []docTable{
	{"summary", summaryTable},
	{"rf1", rf1Table},
	{"learning", learningTable},
	{"replication", pivot("accepted/L; RF=3, random-replica coordinators", []layout{
		{label: "reads ONE", rf: 3, op: "read", cl: "ONE", routing: "random-replica"},
		{label: "reads QUORUM", rf: 3, op: "read", cl: "QUORUM", routing: "random-replica"},
		{label: "writes QUORUM", rf: 3, op: "write", cl: "QUORUM", routing: "random-replica"},
		{label: "writes ALL", rf: 3, op: "write", cl: "ALL", routing: "random-replica"},
		{label: "writes QUORUM, skew ±500 ms", rf: 3, op: "write", cl: "QUORUM", routing: "random-replica", skew: 500},
	}, steady, byOffered([]float64{2, 10, 100}, accepted))},
	{"skew", pivot("accepted/L; RF=3, outside coordinators, ±500 ms", skewLayouts, steady, byOffered([]float64{1.44, 2, 10, 100}, accepted))},
	{"skew-agreement", pivot("same, at V = 10·L", skewLayouts[:4], steady, []column{
		{"scylla disagreement", "scylla", 10, disagreement},
		{"partial writes/accepted", "scylla", 10, partialWrites},
		{"kvnode disagreement", "kvnode", 10, disagreement},
		{"partial writes/accepted", "kvnode", 10, partialWrites},
	})},
	{"onset", pivot("first second/L, skew 0", onsetLayouts, onsetRows(false), byOffered([]float64{2, 5, 10, 100}, firstSecond))},
	{"again", pivot("first second/L, skew 0", onsetLayouts, onsetRows(true), byOffered([]float64{2, 10, 100}, firstSecond))},
	{"datacenters", pivot("accepted/L; 2 DCs × RF=3, WAN 50–150 ms, clients in both", []layout{
		{label: "writes LOCAL_QUORUM", rf: 3, op: "write", cl: "LOCAL_QUORUM", routing: "local-dc"},
		{label: "writes QUORUM", rf: 3, op: "write", cl: "QUORUM", routing: "local-dc"},
		{label: "reads LOCAL_QUORUM", rf: 3, op: "read", cl: "LOCAL_QUORUM", routing: "local-dc"},
		{label: "reads QUORUM", rf: 3, op: "read", cl: "QUORUM", routing: "local-dc"},
		{label: "writes LOCAL_QUORUM, skew ±500 ms", rf: 3, op: "write", cl: "LOCAL_QUORUM", routing: "local-dc", skew: 500},
		{label: "reads LOCAL_QUORUM, skew ±500 ms", rf: 3, op: "read", cl: "LOCAL_QUORUM", routing: "local-dc", skew: 500},
	}, steady, byOffered([]float64{2, 10, 100}, accepted))},
}

// layout selects rows by scenario; skew is in milliseconds.
type layout struct {
	label   string
	rf      int
	op, cl  string
	routing string
	skew    int64
}

func (l layout) has(w Row) bool {
	return w.RF == l.rf && w.Op == l.op && w.CL == l.cl && w.Routing == l.routing && w.SkewMS == l.skew
}

var skewLayouts = []layout{
	{label: "writes ONE (any replica's yes admits)", rf: 3, op: "write", cl: "ONE", routing: "outside", skew: 500},
	{label: "writes QUORUM (two of three)", rf: 3, op: "write", cl: "QUORUM", routing: "outside", skew: 500},
	{label: "writes ALL (every replica's yes)", rf: 3, op: "write", cl: "ALL", routing: "outside", skew: 500},
	{label: "reads QUORUM (both contacted must admit)", rf: 3, op: "read", cl: "QUORUM", routing: "outside", skew: 500},
	{label: "reads ALL", rf: 3, op: "read", cl: "ALL", routing: "outside", skew: 500},
}

// onsetLayouts are the matrix's onset layouts (Matrix), at skew 0.
var onsetLayouts = []layout{
	{label: "RF=1 writes, fixed-first", rf: 1, op: "write", cl: "ONE", routing: "fixed-first"},
	{label: "writes QUORUM, random-replica", rf: 3, op: "write", cl: "QUORUM", routing: "random-replica"},
	{label: "writes ALL, outside", rf: 3, op: "write", cl: "ALL", routing: "outside"},
	{label: "reads QUORUM, outside", rf: 3, op: "read", cl: "QUORUM", routing: "outside"},
	{label: "reads ONE, random-replica", rf: 3, op: "read", cl: "ONE", routing: "random-replica"},
}

// steady keeps the rows of a partition hot all along, with every node up and no flood.
func steady(w Row) bool { return !w.Onset && !w.ReplicaDown && !w.Flood }

// onsetRows keeps the onset rows (again: those turning hot again).
func onsetRows(again bool) func(Row) bool {
	return func(w Row) bool { return w.Onset && w.Again == again }
}

// column is one column of a pivot: the row of configuration cfg at offered rate v, printed by cell.
type column struct {
	label string
	cfg   string
	v     float64
	cell  func(Row) string
}

// byOffered returns a column per configuration and offered rate: "scylla V=2L", "V=10L", …,
// "kvnode V=2L", ….
func byOffered(vs []float64, cell func(Row) string) []column {
	var cols []column
	for _, cfg := range []string{"scylla", "kvnode"} {
		for i, v := range vs {
			label := fmt.Sprintf("V=%gL", v)
			if i == 0 {
				label = cfg + " " + label
			}
			cols = append(cols, column{label, cfg, v, cell})
		}
	}
	return cols
}

func accepted(w Row) string    { return fmt.Sprintf("%.3f", w.AcceptedOverLimit) }
func firstSecond(w Row) string { return fmt.Sprintf("%.2f", *w.FirstSecondOverLimit) }
func disagreement(w Row) string {
	if !w.DisagreementMeasured {
		return "–"
	}
	return percent(w.Disagreement)
}
func partialWrites(w Row) string {
	if w.Op != "write" {
		return "–"
	}
	return fmt.Sprintf("%.3f", w.PartialWritesPerAccepted)
}

// percent prints a fraction as a percentage with two significant digits (at least one decimal
// below 10%).
func percent(x float64) string {
	p := 100 * x
	switch {
	case p == 0:
		return "0%"
	case p < 0.1:
		return fmt.Sprintf("%.2f%%", p)
	case p < 10:
		return fmt.Sprintf("%.1f%%", p)
	default:
		return fmt.Sprintf("%.0f%%", p)
	}
}

// pivot returns a table maker: a row per layout, a column per column, each cell the one row
// that keep, the layout and the column select.
func pivot(corner string, layouts []layout, keep func(Row) bool, cols []column) func([]Row) (string, error) {
	return func(rows []Row) (string, error) {
		var b strings.Builder
		b.WriteString("| " + corner + " |")
		for _, c := range cols {
			b.WriteString(" " + c.label + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(cols)) + "\n")
		for _, l := range layouts {
			b.WriteString("| " + l.label + " |")
			for _, c := range cols {
				w, err := one(rows, func(w Row) bool {
					return keep(w) && l.has(w) && w.Configuration == c.cfg && w.OfferedOverLimit == c.v
				})
				if err != nil {
					return "", fmt.Errorf("%s, %s: %w", l.label, c.label, err)
				}
				b.WriteString(" " + c.cell(w) + " |")
			}
			b.WriteString("\n")
		}
		return b.String(), nil
	}
}

// one returns the one row that keep selects.
func one(rows []Row, keep func(Row) bool) (Row, error) {
	var found []Row
	for _, w := range rows {
		if keep(w) {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		return Row{}, fmt.Errorf("%d rows match, want 1", len(found))
	}
	return found[0], nil
}

// filter returns the rows keep selects.
func filter(rows []Row, keep func(Row) bool) []Row {
	var out []Row
	for _, w := range rows {
		if keep(w) {
			out = append(out, w)
		}
	}
	return out
}

// span prints the lowest and highest of f over rows as "lo – hi" with format, or "–" for no rows.
func span(rows []Row, f func(Row) float64, format string) string {
	if len(rows) == 0 {
		return "–"
	}
	vs := make([]float64, len(rows))
	for i, w := range rows {
		vs[i] = f(w)
	}
	lo, hi := fmt.Sprintf(format, slices.Min(vs)), fmt.Sprintf(format, slices.Max(vs))
	if lo == hi {
		return lo
	}
	return lo + " – " + hi
}

func highest(rows []Row, f func(Row) float64) float64 {
	h := math.Inf(-1)
	for _, w := range rows {
		h = max(h, f(w))
	}
	return h
}

// hotAtRF3 keeps the RF=3 rows at V ≥ 2·L of a partition hot all along: every routing, op,
// consistency level and skew, a replica down (except at ALL, then unavailable) and the flood.
func hotAtRF3(cfg string) func(Row) bool {
	return func(w Row) bool {
		return w.Configuration == cfg && w.RF == 3 && w.OfferedOverLimit >= 2 && !w.Onset && !(w.ReplicaDown && w.CL == "ALL") &&
			w.Routing != "local-dc" // two data centers have a table of their own
	}
}

// summaryTable is "the result in one table".
func summaryTable(rows []Row) (string, error) {
	type line struct {
		label string
		cell  func(cfg string) string
	}
	hot := func(cfg string) []Row { return filter(rows, hotAtRF3(cfg)) }
	onset := func(cfg string, again bool, keep func(Row) bool) []Row {
		return filter(rows, func(w Row) bool {
			return w.Configuration == cfg && w.Onset && w.Again == again && w.OfferedOverLimit >= 2 && keep(w)
		})
	}
	all := func(Row) bool { return true }
	firstOf := func(w Row) float64 { return *w.FirstSecondOverLimit }
	acc := func(w Row) float64 { return w.AcceptedOverLimit }
	n := len(hot("kvnode"))
	if m := len(hot("scylla")); m != n {
		return "", fmt.Errorf("%d kvnode rows and %d scylla rows at RF=3, V ≥ 2·L", n, m)
	}
	nOnset, nAgain := len(onset("kvnode", false, all)), len(onset("kvnode", true, all))
	lines := []line{
		{fmt.Sprintf("accepted/L, lowest – highest (%d rows)", n), func(cfg string) string { return span(hot(cfg), acc, "%.3f") }},
		{"rows outside 0.9–1.1·L", func(cfg string) string {
			out := filter(hot(cfg), func(w Row) bool { return w.AcceptedOverLimit < 0.9 || w.AcceptedOverLimit > 1.1 })
			return fmt.Sprintf("%d of %d", len(out), n)
		}},
		{"partial writes per accepted write, highest", func(cfg string) string {
			return fmt.Sprintf("%.3f", highest(hot(cfg), func(w Row) float64 { return w.PartialWritesPerAccepted }))
		}},
		{"replicas disagreeing, highest", func(cfg string) string {
			return percent(highest(hot(cfg), func(w Row) float64 { return w.Disagreement }))
		}},
		{"rejections outside coordinators make alone, at no replica request (V = 10·L / 100·L)", func(cfg string) string {
			at := func(v float64) string {
				return span(filter(hot(cfg), func(w Row) bool { return w.Routing == "outside" && w.OfferedOverLimit == v }),
					func(w Row) float64 { return 100 * w.LearnedPerRejected }, "%.1f%%")
			}
			return at(10) + " / " + at(100)
		}},
		{fmt.Sprintf("partition turning hot, first second/L (%d rows)", nOnset), func(cfg string) string {
			return span(onset(cfg, false, all), firstOf, "%.2f")
		}},
		{"… at V = 100·L, skew 0", func(cfg string) string {
			return span(onset(cfg, false, func(w Row) bool { return w.OfferedOverLimit == 100 && w.SkewMS == 0 }), firstOf, "%.2f")
		}},
		{fmt.Sprintf("partition turning hot again after a pause, first second/L (%d rows)", nAgain), func(cfg string) string {
			return span(onset(cfg, true, all), firstOf, "%.2f")
		}},
		{"both, accepted/L from the second second on", func(cfg string) string {
			return span(filter(rows, func(w Row) bool { return w.Configuration == cfg && w.Onset && w.OfferedOverLimit >= 2 }), acc, "%.3f")
		}},
		{"cold partitions rejected, highest share (every row)", func(cfg string) string {
			return fmt.Sprintf("%.3f", highest(filter(rows, func(w Row) bool { return w.Configuration == cfg }), func(w Row) float64 { return w.ColdRejected }))
		}},
	}
	var b strings.Builder
	b.WriteString("| RF=3, V ≥ 2·L | scylla | kvnode |\n|---|---:|---:|\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", l.label, l.cell("scylla"), l.cell("kvnode"))
	}
	return b.String(), nil
}

// rf1Table is the mean accepted/L of the RF=1 rows (one counter: the rule alone) per offered
// rate, beside what partitionlimit derives for evenly spaced arrivals.
func rf1Table(rows []Row) (string, error) {
	vs := []float64{0.5, 1, 1.44, 2, 10, 100}
	var b strings.Builder
	b.WriteString("| RF=1, mean accepted/L |")
	for _, v := range vs {
		fmt.Fprintf(&b, " V=%gL |", v)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(vs)) + "\n")
	for _, cfg := range []string{"scylla", "kvnode"} {
		fmt.Fprintf(&b, "| %s |", cfg)
		for _, v := range vs {
			sel := filter(rows, func(w Row) bool { return w.Configuration == cfg && w.RF == 1 && steady(w) && w.OfferedOverLimit == v })
			if len(sel) == 0 {
				return "", fmt.Errorf("no RF=1 %s row at V=%gL", cfg, v)
			}
			sum := 0.0
			for _, w := range sel {
				sum += w.AcceptedOverLimit
			}
			fmt.Fprintf(&b, " %.3f |", sum/float64(len(sel)))
		}
		b.WriteString("\n")
	}
	b.WriteString("| derived (smooth arrivals) |")
	for _, v := range vs {
		fmt.Fprintf(&b, " %.3f |", derivedRate(v))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// derivedRate is partitionlimit's admitted rate over L for a partition offered v·L evenly
// spaced: v up to L, 2 − v + log2 v up to 2L, then L.
func derivedRate(v float64) float64 {
	switch {
	case v <= 1:
		return v
	case v < 2:
		return 2 - v + math.Log2(v)
	default:
		return 1
	}
}

// learningTable is what learning hot partitions does through outside coordinators: kvnode's
// RF=3 outside rows at V ≥ 2·L, per offered rate.
func learningTable(rows []Row) (string, error) {
	var b strings.Builder
	b.WriteString("| kvnode, RF=3, outside coordinators | rows | accepted/L | rejections made by the coordinator alone | partial writes/accepted, highest | disagreement, highest |\n|---|---:|---:|---:|---:|---:|\n")
	for _, v := range []float64{2, 10, 100} {
		sel := filter(rows, func(w Row) bool { return hotAtRF3("kvnode")(w) && w.Routing == "outside" && w.OfferedOverLimit == v })
		if len(sel) == 0 {
			return "", fmt.Errorf("no kvnode outside row at V=%gL", v)
		}
		fmt.Fprintf(&b, "| V = %g·L | %d | %s | %s | %.3f | %s |\n", v, len(sel),
			span(sel, func(w Row) float64 { return w.AcceptedOverLimit }, "%.3f"),
			span(sel, func(w Row) float64 { return 100 * w.LearnedPerRejected }, "%.1f%%"),
			highest(sel, func(w Row) float64 { return w.PartialWritesPerAccepted }),
			percent(highest(sel, func(w Row) float64 { return w.Disagreement })))
	}
	return b.String(), nil
}
