package schema

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// The table options that kvnode accepts for compatibility with Cassandra 3.x and 4.x schemas and
// drivers' exports, without an effect on how it stores or reads data (pebble has no sstables,
// bloom filters, compaction strategies or caches of Cassandra's kind): each is validated as
// Cassandra 4.1 validates it, stored, shown by DESCRIBE when it differs from its default, and
// reported in system_schema.tables with the type drivers expect (docs/cql.md lists them).
const (
	OptionComment                 = "comment"
	OptionCompaction              = "compaction"
	OptionCompression             = "compression"
	OptionCaching                 = "caching"
	OptionBloomFilterFPChance     = "bloom_filter_fp_chance"
	OptionCRCCheckChance          = "crc_check_chance"
	OptionReadRepairChance        = "read_repair_chance"         // 3.x; 4.0 ignores it
	OptionDCLocalReadRepairChance = "dclocal_read_repair_chance" // 3.x; 4.0 ignores it
	OptionReadRepair              = "read_repair"                // 4.x
	OptionMinIndexInterval        = "min_index_interval"
	OptionMaxIndexInterval        = "max_index_interval"
	OptionMemtableFlushPeriod     = "memtable_flush_period_in_ms"
	OptionAdditionalWritePolicy   = "additional_write_policy" // 4.x
	OptionCDC                     = "cdc"
	OptionMemtable                = "memtable" // 4.1
	// default_time_to_live belongs with the TTLs (it takes effect): not one of these.
)

// OptionKind is the type of a compatibility option's value, as system_schema.tables has it.
type OptionKind uint8

// The option kinds.
const (
	OptionText   OptionKind = iota + 1 // text
	OptionDouble                       // double
	OptionInt                          // int
	OptionBool                         // boolean
	OptionMap                          // map<text, text>
)

// OptionValue is the value of a compatibility option, in its canonical form.
type OptionValue struct {
	Kind OptionKind
	Text string      // OptionText
	Num  float64     // OptionDouble, and OptionInt (a whole number)
	Bool bool        // OptionBool
	Map  [][2]string // OptionMap: key, value pairs sorted by key
}

// CQL returns the value as CQL writes it in a WITH clause: 'text', 0.01, 128, true,
// {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy'}.
func (v OptionValue) CQL() string {
	switch v.Kind {
	case OptionText:
		return cql.QuoteString(v.Text)
	case OptionDouble:
		return strconv.FormatFloat(v.Num, 'g', -1, 64)
	case OptionInt:
		return strconv.FormatInt(int64(v.Num), 10)
	case OptionBool:
		return strconv.FormatBool(v.Bool)
	case OptionMap:
		parts := make([]string, len(v.Map))
		for i, kv := range v.Map {
			parts[i] = cql.QuoteString(kv[0]) + ": " + cql.QuoteString(kv[1])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "?"
}

func (v OptionValue) equal(w OptionValue) bool {
	return v.Kind == w.Kind && v.Text == w.Text && v.Num == w.Num && v.Bool == w.Bool && slices.Equal(v.Map, w.Map)
}

// compatOption describes one compatibility option: its kind, its default and how a value is
// read.
type compatOption struct {
	kind  OptionKind
	def   OptionValue
	parse func(cql.Term) (OptionValue, error)
}

// compactionPackage and compressionPackage are the Java packages of Cassandra's strategies
// and compressors; a short class name is stored with its package, as Cassandra stores it.
const (
	compactionPackage  = "org.apache.cassandra.db.compaction."
	compressionPackage = "org.apache.cassandra.io.compress."
)

// compatOptions are the compatibility options by name. Their defaults are Cassandra's, as
// system_schema.tables reports them for a table that did not set them.
var compatOptions = map[string]compatOption{
	OptionComment: {OptionText, OptionValue{Kind: OptionText}, func(v cql.Term) (OptionValue, error) {
		s, err := stringOption(v)
		return OptionValue{Kind: OptionText, Text: s}, err
	}},
	OptionCompaction: {OptionMap, OptionValue{Kind: OptionMap, Map: [][2]string{
		{"class", compactionPackage + "SizeTieredCompactionStrategy"}, {"max_threshold", "32"}, {"min_threshold", "4"}}},
		func(v cql.Term) (OptionValue, error) {
			return classMap(v, "compaction strategy", compactionPackage, []string{"SizeTieredCompactionStrategy",
				"LeveledCompactionStrategy", "TimeWindowCompactionStrategy", "DateTieredCompactionStrategy",
				"UnifiedCompactionStrategy"}, true)
		}},
	OptionCompression: {OptionMap, OptionValue{Kind: OptionMap, Map: [][2]string{
		{"chunk_length_in_kb", "64"}, {"class", compressionPackage + "LZ4Compressor"}}}, parseCompression},
	OptionCaching:                 {OptionMap, OptionValue{Kind: OptionMap, Map: [][2]string{{"keys", "ALL"}, {"rows_per_partition", "NONE"}}}, parseCaching},
	OptionBloomFilterFPChance:     {OptionDouble, OptionValue{Kind: OptionDouble, Num: 0.01}, chance(false)},
	OptionCRCCheckChance:          {OptionDouble, OptionValue{Kind: OptionDouble, Num: 1}, chance(true)},
	OptionReadRepairChance:        {OptionDouble, OptionValue{Kind: OptionDouble}, chance(true)},
	OptionDCLocalReadRepairChance: {OptionDouble, OptionValue{Kind: OptionDouble}, chance(true)},
	OptionReadRepair: {OptionText, OptionValue{Kind: OptionText, Text: "BLOCKING"}, func(v cql.Term) (OptionValue, error) {
		s, err := stringOption(v)
		if err != nil {
			return OptionValue{}, err
		}
		switch u := strings.ToUpper(s); u {
		case "BLOCKING", "NONE":
			return OptionValue{Kind: OptionText, Text: u}, nil
		}
		return OptionValue{}, fmt.Errorf("%s is not a read repair strategy (valid: 'BLOCKING', 'NONE')", describeValue(v))
	}},
	OptionMinIndexInterval:    {OptionInt, OptionValue{Kind: OptionInt, Num: 128}, intOption(1)},
	OptionMaxIndexInterval:    {OptionInt, OptionValue{Kind: OptionInt, Num: 2048}, intOption(1)},
	OptionMemtableFlushPeriod: {OptionInt, OptionValue{Kind: OptionInt}, intOption(0)},
	OptionAdditionalWritePolicy: {OptionText, OptionValue{Kind: OptionText, Text: "99p"}, func(v cql.Term) (OptionValue, error) {
		s, err := stringOption(v)
		if err != nil {
			return OptionValue{}, err
		}
		r, err := parseSpeculativeRetry(s)
		if err != nil {
			return OptionValue{}, fmt.Errorf("%s: %w", describeValue(v), err)
		}
		return OptionValue{Kind: OptionText, Text: r.String()}, nil
	}},
	OptionMemtable: {OptionText, OptionValue{Kind: OptionText, Text: "default"}, func(v cql.Term) (OptionValue, error) {
		s, err := stringOption(v)
		if err != nil {
			return OptionValue{}, err
		}
		if s != "default" {
			return OptionValue{}, fmt.Errorf("%s is not a memtable configuration (valid: 'default')", describeValue(v))
		}
		return OptionValue{Kind: OptionText, Text: s}, nil
	}},
	OptionCDC: {OptionBool, OptionValue{Kind: OptionBool}, func(v cql.Term) (OptionValue, error) {
		lit, ok := v.(*cql.Literal)
		if !ok || (lit.Kind != cql.LitBoolean && lit.Kind != cql.LitString) {
			return OptionValue{}, fmt.Errorf("%s is not a boolean", describeValue(v))
		}
		switch strings.ToLower(lit.Value) {
		case "false":
			return OptionValue{Kind: OptionBool}, nil
		case "true":
			return OptionValue{}, fmt.Errorf("true is not supported: kvnode has no change data capture")
		}
		return OptionValue{}, fmt.Errorf("%s is not a boolean", describeValue(v))
	}},
}

// OptionExtensions is the name of the table option Cassandra 4's DESCRIBE writes as
// extensions = {}: accepted when empty, and otherwise refused (kvnode's own options are
// options of their own, such as per_partition_rate_limit).
const OptionExtensions = "extensions"

// checkExtensions checks the value of the extensions option: an empty map.
func checkExtensions(v cql.Term) error {
	if m, ok := v.(*cql.MapLiteral); !ok || len(m.Entries) > 0 {
		return fmt.Errorf("%s = %s: only {} is accepted; kvnode has no table extensions", OptionExtensions, describeValue(v))
	}
	return nil
}

// CompatOptionNames returns the names of the compatibility options, sorted.
func CompatOptionNames() []string {
	names := make([]string, 0, len(compatOptions))
	for n := range compatOptions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DefaultOption returns the default of the compatibility option name: Cassandra 3.0's, as
// system_schema.tables reports it; false when name is not a compatibility option.
func DefaultOption(name string) (OptionValue, bool) {
	o, ok := compatOptions[name]
	return o.def, ok
}

// Option returns the value of the compatibility option name for the table: the value it set,
// or the default; false when name is not a compatibility option.
func (t *Table) Option(name string) (OptionValue, bool) {
	o, ok := compatOptions[name]
	if !ok {
		return OptionValue{}, false
	}
	if v, set := t.options[name]; set {
		return v, true
	}
	return o.def, true
}

// setOptions returns the table's options set to other than their defaults, sorted by name.
func (t *Table) setOptions() []string {
	names := make([]string, 0, len(t.options))
	for n := range t.options {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// compatOptionsFrom applies the compatibility options among opts (tableOptions checks the
// names and repeated ones). A value equal to the default is not kept, so that a table encodes
// alike however its default was reached; ALTER TABLE without an option keeps its value.
// Afterwards min_index_interval must not exceed max_index_interval.
func (t *Table) compatOptionsFrom(opts []cql.Option) error {
	for _, o := range opts {
		if o.Name.Name == OptionExtensions {
			if err := checkExtensions(o.Value); err != nil {
				return err
			}
			continue
		}
		c, ok := compatOptions[o.Name.Name]
		if !ok {
			continue
		}
		if lit, ok := o.Value.(*cql.Literal); ok && lit.Kind == cql.LitBind {
			return fmt.Errorf("%s = %s: bind markers cannot be used in schema statements", o.Name.Name, describeValue(o.Value))
		}
		v, err := c.parse(o.Value)
		if err != nil {
			return fmt.Errorf("%s = %w", o.Name.Name, err)
		}
		t.setOption(o.Name.Name, v)
	}
	lo, _ := t.Option(OptionMinIndexInterval)
	hi, _ := t.Option(OptionMaxIndexInterval)
	if lo.Num > hi.Num {
		return fmt.Errorf("%s = %s is greater than %s = %s", OptionMinIndexInterval, lo.CQL(), OptionMaxIndexInterval, hi.CQL())
	}
	return nil
}

// setOption sets the option name to v. The map is copied, not changed: an altered table
// shares it with the table it was copied from, which must not change.
func (t *Table) setOption(name string, v OptionValue) {
	m := make(map[string]OptionValue, len(t.options)+1)
	for n, x := range t.options {
		if n != name {
			m[n] = x
		}
	}
	if !v.equal(compatOptions[name].def) {
		m[name] = v
	}
	if len(m) == 0 {
		m = nil // no options set, as a decoded table has
	}
	t.options = m
}

// parseOptionText reads the CQL text of a compatibility option's value as CQL() writes it (a
// stored schema's), through the option's own validation.
func parseOptionText(name, text string) (OptionValue, error) {
	c, ok := compatOptions[name]
	if !ok {
		return OptionValue{}, fmt.Errorf("unknown table option %q", name)
	}
	st, err := cql.ParseStatement("ALTER TABLE t WITH " + cql.QuoteIdent(name) + " = " + text)
	if err != nil {
		return OptionValue{}, fmt.Errorf("option %s = %s: %w", name, text, err)
	}
	opts := st.(*cql.AlterTableStmt).Options
	v, err := c.parse(opts[0].Value)
	if err != nil {
		return OptionValue{}, fmt.Errorf("option %s = %w", name, err)
	}
	if v.CQL() != text {
		return OptionValue{}, fmt.Errorf("option %s = %s is not in its canonical form %s", name, text, v.CQL())
	}
	return v, nil
}

func stringOption(v cql.Term) (string, error) {
	lit, ok := v.(*cql.Literal)
	if !ok || lit.Kind != cql.LitString {
		return "", fmt.Errorf("%s is not a string", describeValue(v))
	}
	return lit.Value, nil
}

// chance reads a probability: a number from 0 (above 0 unless zeroOK) to 1.
func chance(zeroOK bool) func(cql.Term) (OptionValue, error) {
	return func(v cql.Term) (OptionValue, error) {
		lit, ok := v.(*cql.Literal)
		var f float64
		var err error
		if ok && (lit.Kind == cql.LitFloat || lit.Kind == cql.LitInteger || lit.Kind == cql.LitString) {
			f, err = strconv.ParseFloat(lit.Value, 64)
		}
		if !ok || err != nil || lit.Kind == cql.LitFloat && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return OptionValue{}, fmt.Errorf("%s is not a number", describeValue(v))
		}
		low := "0 (excluded)"
		if zeroOK {
			low = "0"
		}
		if f < 0 || f > 1 || f == 0 && !zeroOK || math.IsNaN(f) {
			return OptionValue{}, fmt.Errorf("%s is out of range: a probability from %s to 1", describeValue(v), low)
		}
		return OptionValue{Kind: OptionDouble, Num: f}, nil
	}
}

// intOption reads a whole number from min to 2147483647.
func intOption(min int64) func(cql.Term) (OptionValue, error) {
	return func(v cql.Term) (OptionValue, error) {
		lit, ok := v.(*cql.Literal)
		if !ok || (lit.Kind != cql.LitInteger && lit.Kind != cql.LitString) {
			return OptionValue{}, fmt.Errorf("%s is not a whole number", describeValue(v))
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(lit.Value, "+"), 10, 64)
		if err != nil && strings.Trim(lit.Value, "+-0123456789") == "" && lit.Value != "" {
			return OptionValue{}, fmt.Errorf("%s is too large; the maximum is %d", describeValue(v), math.MaxInt32)
		}
		if err != nil {
			return OptionValue{}, fmt.Errorf("%s is not a whole number", describeValue(v))
		}
		if n < min || n > math.MaxInt32 {
			return OptionValue{}, fmt.Errorf("%s is out of range: from %d to %d", describeValue(v), min, math.MaxInt32)
		}
		return OptionValue{Kind: OptionInt, Num: float64(n)}, nil
	}
}

// optionMap reads a map option's value: string keys, each once, with string, number or
// boolean values, kept as their text.
func optionMap(v cql.Term) (map[string]string, error) {
	m, ok := v.(*cql.MapLiteral)
	if !ok {
		return nil, fmt.Errorf("%s is not a map", describeValue(v))
	}
	out := make(map[string]string, len(m.Entries))
	for _, e := range m.Entries {
		k, ok := e.Key.(*cql.Literal)
		if !ok || k.Kind != cql.LitString {
			return nil, fmt.Errorf("%s: key %s is not a string", describeValue(v), describeValue(e.Key))
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("%s: key %s is given twice", describeValue(v), cql.QuoteString(k.Value))
		}
		val, ok := e.Value.(*cql.Literal)
		if !ok {
			return nil, fmt.Errorf("%s: the value of %s is not a string or a number", describeValue(v), cql.QuoteString(k.Value))
		}
		switch val.Kind {
		case cql.LitString, cql.LitInteger, cql.LitFloat, cql.LitBoolean:
		default:
			return nil, fmt.Errorf("%s: the value of %s is not a string or a number", describeValue(v), cql.QuoteString(k.Value))
		}
		out[k.Value] = val.Value
	}
	return out, nil
}

func sortedPairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// classMap reads a map with a 'class' key naming one of known (short names, or with pkg),
// stored with pkg. The other keys are kept as given: kvnode does not use them.
func classMap(v cql.Term, what, pkg string, known []string, required bool) (OptionValue, error) {
	m, err := optionMap(v)
	if err != nil {
		return OptionValue{}, err
	}
	class, ok := m["class"]
	if !ok {
		if required {
			return OptionValue{}, fmt.Errorf("%s has no 'class' (the %s)", describeValue(v), what)
		}
		return OptionValue{Kind: OptionMap, Map: sortedPairs(m)}, nil
	}
	short := strings.TrimPrefix(class, pkg)
	if !slices.Contains(known, short) {
		return OptionValue{}, fmt.Errorf("%s: unknown %s %s (valid: %s)", describeValue(v), what, cql.QuoteString(class), strings.Join(known, ", "))
	}
	m["class"] = pkg + short
	return OptionValue{Kind: OptionMap, Map: sortedPairs(m)}, nil
}

// parseCompression reads the compression option: a compressor 'class' with its
// 'chunk_length_in_kb' (a power of two), or {'enabled': 'false'}.
func parseCompression(v cql.Term) (OptionValue, error) {
	m, err := optionMap(v)
	if err != nil {
		return OptionValue{}, err
	}
	if e, ok := m["enabled"]; ok && strings.EqualFold(e, "false") {
		return OptionValue{Kind: OptionMap, Map: [][2]string{{"enabled", "false"}}}, nil
	}
	if c, ok := m["sstable_compression"]; ok { // Cassandra 2.x's name of the class
		delete(m, "sstable_compression")
		if _, dup := m["class"]; !dup {
			m["class"] = c
		}
	}
	if kb, ok := m["chunk_length_in_kb"]; ok {
		n, err := strconv.Atoi(kb)
		if err != nil || n <= 0 || n&(n-1) != 0 {
			return OptionValue{}, fmt.Errorf("%s: chunk_length_in_kb %s is not a power of two", describeValue(v), cql.QuoteString(kb))
		}
	}
	lit := &cql.MapLiteral{}
	for _, kv := range sortedPairs(m) {
		lit.Entries = append(lit.Entries, cql.MapEntry{Key: &cql.Literal{Kind: cql.LitString, Value: kv[0]}, Value: &cql.Literal{Kind: cql.LitString, Value: kv[1]}})
	}
	if _, ok := m["class"]; !ok {
		return OptionValue{}, fmt.Errorf("%s has no 'class' (the compressor; {'enabled': 'false'} turns compression off)", describeValue(v))
	}
	return classMap(lit, "compressor", compressionPackage, []string{"LZ4Compressor", "SnappyCompressor",
		"DeflateCompressor", "ZstdCompressor", "NoopCompressor"}, true)
}

// parseCaching reads the caching option: 'keys' 'ALL' or 'NONE' and 'rows_per_partition'
// 'ALL', 'NONE' or a positive number; a key left out keeps its default.
func parseCaching(v cql.Term) (OptionValue, error) {
	m, err := optionMap(v)
	if err != nil {
		return OptionValue{}, err
	}
	out := map[string]string{"keys": "ALL", "rows_per_partition": "NONE"}
	for k, val := range m {
		u := strings.ToUpper(val)
		switch k {
		case "keys":
			if u != "ALL" && u != "NONE" {
				return OptionValue{}, fmt.Errorf("%s: keys %s is not 'ALL' or 'NONE'", describeValue(v), cql.QuoteString(val))
			}
			out[k] = u
		case "rows_per_partition":
			if u != "ALL" && u != "NONE" {
				n, err := strconv.Atoi(val)
				if err != nil || n <= 0 {
					return OptionValue{}, fmt.Errorf("%s: rows_per_partition %s is not 'ALL', 'NONE' or a positive number", describeValue(v), cql.QuoteString(val))
				}
				u = strconv.Itoa(n)
			}
			out[k] = u
		default:
			return OptionValue{}, fmt.Errorf("%s: unknown key %s (valid: 'keys', 'rows_per_partition')", describeValue(v), cql.QuoteString(k))
		}
	}
	return OptionValue{Kind: OptionMap, Map: sortedPairs(out)}, nil
}
