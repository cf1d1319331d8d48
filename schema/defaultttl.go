package schema

import (
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/cql"
)

// OptionDefaultTTL is the name of the table option that gives writes without USING TTL a time
// to live.
const OptionDefaultTTL = "default_time_to_live"

// MaxTTL is the largest time to live in seconds a write or default_time_to_live may give: 20
// years, Cassandra's limit (cell.MaxTTL).
const MaxTTL = cell.MaxTTL

// DefaultTTL returns the table's default_time_to_live in seconds: the TTL of writes that give
// none (USING TTL), 0 for none.
func (t *Table) DefaultTTL() int32 { return t.defaultTTL }

// defaultTTLOption applies the default_time_to_live option among opts, if any. ALTER TABLE
// without it keeps the table's value.
func (t *Table) defaultTTLOption(opts []cql.Option) error {
	for _, o := range opts {
		if o.Name.Name != OptionDefaultTTL {
			continue
		}
		n, err := ParseDefaultTTL(o.Value)
		if err != nil {
			return err
		}
		t.defaultTTL = n
	}
	return nil
}

// ParseDefaultTTL interprets the value of the default_time_to_live option: an integer from 0
// (no TTL) to MaxTTL seconds, written as a number or a string of digits.
func ParseDefaultTTL(v cql.Term) (int32, error) {
	if lit, ok := v.(*cql.Literal); ok && (lit.Kind == cql.LitInteger || lit.Kind == cql.LitString) {
		s := strings.TrimPrefix(lit.Value, "+")
		if s != "" && strings.Trim(s, "0") == "" {
			return 0, nil
		}
	}
	n, err := positiveInt(v, MaxTTL, fmt.Sprintf("default_time_to_live is a whole number of seconds from 0 (none) to %d (20 years)", MaxTTL))
	if err != nil {
		return 0, fmt.Errorf("%s = %w", OptionDefaultTTL, err)
	}
	return int32(n), nil
}
