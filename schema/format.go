package schema

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// FormatKey renders the values of key columns cols for messages: (k="a", n=3). A missing value
// is "?", and one that does not decode as its column's type is shown in hex with the reason.
func FormatKey(cols []Column, values [][]byte) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cql.QuoteIdent(c.Name))
		b.WriteByte('=')
		if i >= len(values) {
			b.WriteByte('?')
			continue
		}
		switch v, err := c.Type.Decode(values[i]); x := v.(type) {
		case nil:
			fmt.Fprintf(&b, "0x%x (%v)", values[i], err)
		case string:
			b.WriteString(strconv.Quote(x))
		case []byte:
			fmt.Fprintf(&b, "0x%x", x)
		case time.Duration: // a time of day
			b.WriteString(FormatTimeOfDay(x))
		case time.Time:
			b.WriteString(x.Format("2006-01-02T15:04:05.000Z07:00"))
		default:
			fmt.Fprint(&b, x)
		}
	}
	b.WriteByte(')')
	return b.String()
}
