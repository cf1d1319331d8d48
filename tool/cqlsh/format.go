package cqlsh

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// timestampLayout prints timestamps in RFC 3339, UTC, with milliseconds (kvnode's resolution).
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// writeRows prints a rows result as cqlsh does: a header, a separator of dashes joined by "-+-",
// one line per row, a blank line and the row count. Numbers are aligned right, everything else
// left; the header follows its column. The last column is not padded when it is aligned left,
// so no line ends in spaces that belong to no value.
func writeRows(w io.Writer, cols []client.Column, rows [][]any) error {
	cells := make([][]string, len(rows))
	widths := make([]int, len(cols))
	right := make([]bool, len(cols))
	for j, c := range cols {
		widths[j] = utf8.RuneCountInString(c.Name)
		right[j] = isNumericType(c.Type)
	}
	for i, row := range rows {
		cells[i] = make([]string, len(cols))
		for j := range cols {
			var v any
			if j < len(row) {
				v = row[j]
			}
			s := formatValue(v)
			cells[i][j] = s
			widths[j] = max(widths[j], utf8.RuneCountInString(s))
		}
	}

	var b strings.Builder
	line := func(vals []string) {
		for j, v := range vals {
			if j > 0 {
				b.WriteString(" |")
			}
			b.WriteByte(' ')
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(v))
			switch {
			case right[j]:
				b.WriteString(pad + v)
			case j == len(vals)-1:
				b.WriteString(v)
			default:
				b.WriteString(v + pad)
			}
		}
		b.WriteByte('\n')
	}
	names := make([]string, len(cols))
	for j, c := range cols {
		names[j] = c.Name
	}
	line(names)
	for j, wd := range widths {
		if j > 0 {
			b.WriteString("+")
		}
		b.WriteString(strings.Repeat("-", wd+2))
	}
	b.WriteByte('\n')
	for _, r := range cells {
		line(r)
	}
	fmt.Fprintf(&b, "\n(%d rows)\n", len(rows))
	_, err := io.WriteString(w, b.String())
	return err
}

func isNumericType(t string) bool {
	switch t {
	case "int", "bigint", "double":
		return true
	}
	return false
}

// formatValue renders one cell: text unquoted (control characters escaped so a row stays on one
// line), blobs as 0x hex, timestamps in RFC 3339 UTC with milliseconds, doubles in the shortest
// form that reads back exactly, null as "null".
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return escapeText(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return formatDouble(v)
	case bool:
		return strconv.FormatBool(v)
	case []byte:
		return "0x" + hex.EncodeToString(v)
	case time.Time:
		return v.UTC().Format(timestampLayout)
	case float32:
		return formatFloat(float64(v), 32)
	case time.Duration: // a time of day
		return fmt.Sprintf("%02d:%02d:%02d.%09d", v/time.Hour, v/time.Minute%60, v/time.Second%60, v%time.Second)
	case schema.List:
		return "[" + formatElems(v) + "]"
	case schema.Set:
		return "{" + formatElems(v) + "}"
	case schema.Tuple:
		return "(" + formatElems(v) + ")"
	case schema.UDT: // as cqlsh: {street: 'main', zip: 5}, null fields included
		q := make([]string, len(v))
		for i, f := range v {
			q[i] = cql.QuoteIdent(f.Name) + ": " + formatElem(f.Value)
		}
		return "{" + strings.Join(q, ", ") + "}"
	case schema.Map:
		q := make([]string, len(v))
		for i, e := range v {
			q[i] = formatElem(e.Key) + ": " + formatElem(e.Value)
		}
		return "{" + strings.Join(q, ", ") + "}"
	case []string: // set<text>, list<text>
		q := make([]string, len(v))
		for i, e := range v {
			q[i] = cql.QuoteString(escapeText(e))
		}
		return "[" + strings.Join(q, ", ") + "]"
	case map[string]string:
		return formatMap(v, func(s string) string { return cql.QuoteString(escapeText(s)) })
	case map[string][]byte:
		return formatMap(v, func(b []byte) string { return "0x" + hex.EncodeToString(b) })
	default: // UUID, netip.Addr, Date, Decimal and *big.Int print themselves
		return fmt.Sprint(v)
	}
}

// formatElems renders the elements of a frozen collection or tuple, separated by ", ".
func formatElems(v []any) string {
	q := make([]string, len(v))
	for i, e := range v {
		q[i] = formatElem(e)
	}
	return strings.Join(q, ", ")
}

// formatElem renders a value inside a collection or tuple as cqlsh does: text quoted, the rest
// as formatValue renders it.
func formatElem(v any) string {
	if s, ok := v.(string); ok {
		return cql.QuoteString(escapeText(s))
	}
	return formatValue(v)
}

// formatMap renders a map as cqlsh does, {'k': v, ...}, keys in order.
func formatMap[V any](m map[string]V, value func(V) string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cql.QuoteString(escapeText(k)))
		b.WriteString(": ")
		b.WriteString(value(m[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// formatDouble prints plain decimals for ordinary magnitudes and an exponent for very large or
// very small ones; NaN and the infinities use their CQL literal names.
func formatDouble(f float64) string { return formatFloat(f, 64) }

// formatFloat is formatDouble for a float of bitSize bits (32 prints a float's shortest form).
func formatFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.FormatFloat(f, 'f', -1, bitSize)
	}
	return strconv.FormatFloat(f, 'e', -1, bitSize)
}

// escapeText replaces control characters with backslash escapes (\n, \t, \r, \x7f, \u2028) and
// invalid UTF-8 bytes with \xNN.
func escapeText(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x100 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
