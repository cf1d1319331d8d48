package snapshot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Writer writes a restored partition to the current replicas of its token: the node implements
// it over its ring and internode transport. m's TableId is t's id.
type Writer interface {
	WritePartition(ctx context.Context, t *schema.Table, m *replicapb.Mutation) error
}

// Restored is what a restore wrote of one table.
type Restored struct {
	Keyspace, Table string
	// Partitions and Bytes are the partitions written (each to every replica) and their size.
	Partitions, Bytes uint64
}

// restoreWorkers is how many partitions a restore writes at once.
const restoreWorkers = 8

// Restore writes the tables of snapshot tag that keyspace and table select (both empty: every
// table it holds) into the tables of the same names in cur, through w. Each of those tables
// must exist with the snapshot's primary key and columns (create them first from the
// manifest's CQL): else the error wraps ErrNoTarget, and gives that CQL for a missing one. It stops at the first write that
// fails; running it again is harmless, as the writes merge by last-write-wins.
func (m *Manager) Restore(ctx context.Context, cur *schema.Schema, tag, keyspace, table string, w Writer) ([]Restored, error) {
	man, err := m.Load(tag)
	if err != nil {
		return nil, err
	}
	var entries []TableEntry
	for _, e := range man.Tables {
		if (keyspace == "" || e.Keyspace == keyspace) && (table == "" || e.Name == table) {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		var held []string
		for _, e := range man.Tables {
			held = append(held, cql.QuoteIdent(e.Keyspace)+"."+cql.QuoteIdent(e.Name))
		}
		what := "keyspace " + cql.QuoteIdent(keyspace)
		if table != "" {
			what = "table " + cql.QuoteIdent(keyspace) + "." + cql.QuoteIdent(table)
		}
		return nil, fmt.Errorf("snapshot %s holds no %s (it holds: %s): %w", tag, what, strings.Join(held, ", "), ErrNotFound)
	}
	// Check every table before writing anything.
	type pair struct{ old, cur *schema.Table }
	var pairs []pair
	for _, e := range entries {
		old, err := man.table(e)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", tag, err)
		}
		t, ok := cur.Table(e.Keyspace, e.Name)
		if !ok {
			return nil, fmt.Errorf("restore %s: %w: table %s does not exist; create it first as the snapshot's manifest says:\n%s\n%s",
				tag, ErrNoTarget, old.QualifiedName(), man.keyspaceCQL(e.Keyspace), e.CQL)
		}
		if err := compatible(old, t); err != nil {
			return nil, fmt.Errorf("restore %s: %w: table %s: %w", tag, ErrNoTarget, t.QualifiedName(), err)
		}
		pairs = append(pairs, pair{old, t})
	}
	src, err := replica.OpenCheckpoint(filepath.Join(m.cfg.Dir, tag, dataDir), nil)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", tag, err)
	}
	defer src.Close()
	var out []Restored
	for _, p := range pairs {
		r, err := restoreTable(ctx, src, p.old, p.cur, w)
		if err != nil {
			return out, fmt.Errorf("restore %s: table %s: %w", tag, p.cur.QualifiedName(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// restoreTable writes every partition of old in src into t through w, restoreWorkers at once.
func restoreTable(ctx context.Context, src *replica.Store, old, t *schema.Table, w Writer) (Restored, error) {
	r := Restored{Keyspace: t.Keyspace, Table: t.Name}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg                sync.WaitGroup
		partitions, bytes atomic.Uint64
	)
	work := make(chan *replicapb.Mutation)
	for range restoreWorkers {
		wg.Go(func() {
			for mu := range work {
				if err := w.WritePartition(ctx, t, mu); err != nil {
					cancel(err)
					continue
				}
				partitions.Add(1)
				bytes.Add(uint64(proto.Size(mu)))
			}
		})
	}
	scanErr := src.ScanPartitions(ctx, old, replica.TokenRange{Start: math.MinInt64, End: math.MaxInt64}, func(mu *replicapb.Mutation) error {
		mu.TableId = uint64(t.ID)
		select {
		case work <- mu:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(work)
	wg.Wait()
	r.Partitions, r.Bytes = partitions.Load(), bytes.Load()
	if err := context.Cause(ctx); err != nil {
		return r, err
	}
	return r, scanErr
}

// table rebuilds the snapshot's table e, with its id then, from the manifest's CQL.
func (man *Manifest) table(e TableEntry) (*schema.Table, error) {
	s := schema.New()
	v := schema.Version{Timestamp: 1, Node: "snapshot"}
	for _, src := range []string{man.keyspaceCQL(e.Keyspace), e.CQL} {
		st, err := cql.ParseStatement(src)
		if err != nil {
			return nil, fmt.Errorf("the manifest's CQL of %s.%s does not parse: %w", e.Keyspace, e.Name, err)
		}
		if s, err = s.Apply(st, "", schema.Change{Version: v, TableID: schema.TableID(e.ID)}); err != nil {
			return nil, fmt.Errorf("the manifest's CQL of %s.%s: %w", e.Keyspace, e.Name, err)
		}
	}
	t, ok := s.Table(e.Keyspace, e.Name)
	if !ok || t.ID != schema.TableID(e.ID) {
		return nil, fmt.Errorf("the manifest's CQL does not create table %s.%s", e.Keyspace, e.Name)
	}
	return t, nil
}

// keyspaceCQL returns the manifest's CREATE KEYSPACE of keyspace ks.
func (man *Manifest) keyspaceCQL(ks string) string {
	for _, k := range man.Keyspaces {
		if k.Name == ks {
			return k.CQL
		}
	}
	return ""
}

// compatible reports whether the snapshot's table old can be written into t: the same primary
// key (names, types, order) and every other column of old in t with its type.
func compatible(old, t *schema.Table) error {
	key := func(cs []schema.Column) string {
		var b strings.Builder
		for _, c := range cs {
			fmt.Fprintf(&b, "%s %s desc=%t, ", c.Name, c.Type, c.Descending)
		}
		return b.String()
	}
	if key(old.PartitionKey) != key(t.PartitionKey) || key(old.Clustering) != key(t.Clustering) {
		return errors.New("its primary key differs from the snapshot's: recreate it with the manifest's CQL")
	}
	for _, c := range old.Regular {
		tc, ok := t.Column(c.Name)
		switch {
		case !ok:
			return fmt.Errorf("the snapshot's column %s is not in the table: add it (ALTER TABLE ... ADD %s %s)", cql.QuoteIdent(c.Name), cql.QuoteIdent(c.Name), c.Type)
		case tc.Type != c.Type || tc.Kind != c.Kind:
			return fmt.Errorf("the snapshot's column %s is %s, the table's is %s", cql.QuoteIdent(c.Name), c.Type, tc.Type)
		}
	}
	return nil
}
