package shell

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// Options are the coordinator's settings: its timeouts, the sizes it accepts, the bound on
// client timestamps, and how it learns hot partitions. The zero value of each field means its
// default (EnsureDefaults). The YAML tags are the keys of kvnode's configuration file
// (node.Config nests Options); the fields tagged "-" are set in code.
type Options struct {
	// WriteTimeout and ReadTimeout bound how long a write or a read waits for its replicas,
	// including read repair. A client deadline that ends sooner wins. Defaults
	// DefaultWriteTimeout and DefaultReadTimeout.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	ReadTimeout  time.Duration `yaml:"read_timeout"`
	// ScanPageTime is how long the coordinator may spend assembling one page of a paged scan
	// or index query, its replicas' reads and the scan pacing's waits included, before it
	// returns the page short, with a paging state (scan.go, scanPageEnd). Default (0): half the
	// statement's read timeout (ReadTimeout, or its USING TIMEOUT), so a page neither reaches
	// the read timeout nor the drivers' client timeouts (10 s and more) however slowly the
	// node paces it. Set in code (tests); negative is refused.
	ScanPageTime time.Duration `yaml:"-"`
	// MaxMutationSize bounds one write's keys, column names and values, in bytes; a larger write
	// is refused before any replica sees it. Default DefaultMaxMutationSize.
	MaxMutationSize int `yaml:"max_mutation_size"`
	// MaxStatementSize bounds the text of one statement, in bytes (Execute's, Prepare's and
	// each of a batch's unprepared children), 1 to math.MaxInt32; a longer one is refused with
	// an *InvalidError before it is parsed. Default DefaultMaxStatementSize.
	MaxStatementSize int `yaml:"max_statement_size"`
	// MaxTimestampAhead is how far ahead of the clock a client's USING TIMESTAMP may be; a
	// write beyond it is refused with an *InvalidError naming the bound. Default
	// DefaultMaxTimestampAhead.
	MaxTimestampAhead time.Duration `yaml:"max_timestamp_ahead"`
	// Learning lets a coordinator that is not a replica of a partition learn from its replicas'
	// rejections that the partition is hot and reject further operations on it itself (see
	// learner); it needs Config.Deltas. Off by default: on real processes with skewed replica
	// clocks it admitted 0.85–0.90 × the limit through a non-replica coordinator
	// (test/e2e TestClockSkewHoldsTheLimit), below the 0.9 the simulator promised.
	Learning bool `yaml:"coordinator_learning"`
	// PropagationInterval is how often deltas are flushed. Default
	// coordinator.DefaultPropagationInterval.
	PropagationInterval time.Duration `yaml:"-"`
	// ReadPageBytes bounds the size of one replica's answer to a read, 1 to math.MaxUint32: a
	// replica stops after the row that takes its answer past it, and the coordinator asks for
	// the next page. Default DefaultReadPageBytes.
	ReadPageBytes int `yaml:"-"`
	// TombstoneWarnThreshold is how many tombstones one replica may scan for a read before the
	// read's answer carries a warning (Cassandra's tombstone_warn_threshold; the replicas fail
	// the read at their own, higher, failure threshold); negative disables the warning. Default
	// DefaultTombstoneWarnThreshold.
	TombstoneWarnThreshold int `yaml:"-"`
	// PartitionKeysInSelect is the most partition keys one SELECT's IN may name (Cassandra
	// 4.1's guardrail partition_keys_in_select, fail threshold); -1 means no bound. Default
	// DefaultPartitionKeysInSelect.
	PartitionKeysInSelect int `yaml:"partition_keys_in_select"`
	// InSelectCartesianProduct is the most combinations the IN restrictions of one SELECT
	// may produce, partition and clustering keys together (4.1's guardrail
	// in_select_cartesian_product, fail threshold); -1 means no bound. Default
	// DefaultInSelectCartesianProduct.
	InSelectCartesianProduct int `yaml:"in_select_cartesian_product"`
	// MaxCollectionSize and MaxCollectionItems are the collection guardrails (Cassandra 4.1's
	// collection_size and items_per_collection fail thresholds): a write of a collection value,
	// or of elements of a non-frozen collection, larger than MaxCollectionSize bytes or with more
	// than MaxCollectionItems elements is refused before any replica sees it. For a non-frozen
	// collection they bound what one write adds, not the stored collection (which a write does
	// not read), as in Cassandra. 0, the default, is no limit.
	MaxCollectionSize  int `yaml:"max_collection_size"`
	MaxCollectionItems int `yaml:"max_collection_items"`
}

// DefaultPartitionKeysInSelect and DefaultInSelectCartesianProduct are the defaults of the IN
// guardrails. Cassandra leaves both off; kvnode bounds them, as an IN reads its partitions in
// parallel.
const (
	DefaultPartitionKeysInSelect    = 100
	DefaultInSelectCartesianProduct = 1000
)

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.MaxMutationSize == 0 {
		o.MaxMutationSize = DefaultMaxMutationSize
	}
	if o.MaxStatementSize == 0 {
		o.MaxStatementSize = DefaultMaxStatementSize
	}
	if o.MaxTimestampAhead == 0 {
		o.MaxTimestampAhead = DefaultMaxTimestampAhead
	}
	if o.PropagationInterval == 0 {
		o.PropagationInterval = coordinator.DefaultPropagationInterval
	}
	if o.ReadPageBytes == 0 {
		o.ReadPageBytes = DefaultReadPageBytes
	}
	if o.TombstoneWarnThreshold == 0 {
		o.TombstoneWarnThreshold = DefaultTombstoneWarnThreshold
	}
	if o.PartitionKeysInSelect == 0 {
		o.PartitionKeysInSelect = DefaultPartitionKeysInSelect
	}
	if o.InSelectCartesianProduct == 0 {
		o.InSelectCartesianProduct = DefaultInSelectCartesianProduct
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable settings. Each error names the
// field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	for _, d := range []struct {
		field, key string
		v          time.Duration
	}{
		{"WriteTimeout", "write_timeout", o.WriteTimeout},
		{"ReadTimeout", "read_timeout", o.ReadTimeout},
		{"MaxTimestampAhead", "max_timestamp_ahead", o.MaxTimestampAhead},
		{"PropagationInterval", "", o.PropagationInterval},
	} {
		if d.v <= 0 {
			return fmt.Errorf("coordinator: Options.%s%s is %v, want a positive duration", d.field, key(d.key), d.v)
		}
	}
	if o.ScanPageTime < 0 {
		return fmt.Errorf("coordinator: Options.ScanPageTime is %v, want a positive duration, or 0 for half the read timeout", o.ScanPageTime)
	}
	if o.MaxCollectionSize < 0 || o.MaxCollectionItems < 0 {
		return fmt.Errorf("coordinator: Options.MaxCollectionSize (max_collection_size) and MaxCollectionItems (max_collection_items) are %d and %d, want 0 (no limit) or a positive number", o.MaxCollectionSize, o.MaxCollectionItems)
	}
	if o.MaxMutationSize < 1 {
		return fmt.Errorf("coordinator: Options.MaxMutationSize (max_mutation_size) is %d, want a positive number of bytes", o.MaxMutationSize)
	}
	for _, n := range []struct {
		field, key string
		v, max     int
	}{
		{"MaxStatementSize", "max_statement_size", o.MaxStatementSize, math.MaxInt32},
		{"ReadPageBytes", "", o.ReadPageBytes, math.MaxUint32},
	} {
		if n.v < 1 || n.v > n.max {
			return fmt.Errorf("coordinator: Options.%s%s is %d, want 1 to %d bytes", n.field, key(n.key), n.v, n.max)
		}
	}
	for _, g := range []struct {
		field, key string
		v          int
	}{
		{"PartitionKeysInSelect", "partition_keys_in_select", o.PartitionKeysInSelect},
		{"InSelectCartesianProduct", "in_select_cartesian_product", o.InSelectCartesianProduct},
	} {
		if g.v < -1 {
			return fmt.Errorf("coordinator: Options.%s%s is %d, want a positive number, or -1 for no bound", g.field, key(g.key), g.v)
		}
	}
	return nil
}

// key formats a configuration key for an error: " (key)", or nothing for a field set in code.
func key(k string) string {
	if k == "" {
		return ""
	}
	return " (" + k + ")"
}

// EnsureDefaults replaces zero fields with their defaults, the Options' among them, and returns
// c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Draw == nil {
		c.Draw = rand.Float64
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes an executor NewExecutor can build.
func (c *Config) Validate() error {
	switch {
	case c.LocalID == "":
		return errors.New("coordinator: Config.LocalID is empty")
	case c.Ring == nil:
		return errors.New("coordinator: Config.Ring is nil")
	case c.Transport == nil:
		return errors.New("coordinator: Config.Transport is nil")
	case c.Schema == nil:
		return errors.New("coordinator: Config.Schema is nil")
	}
	return c.Options.Validate()
}
