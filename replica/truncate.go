package replica

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/schema"
)

// TruncateTable deletes the data of table t that its TRUNCATE removed: every entry written at
// or before t.TruncatedAt. Reads already ignore that data (schema.Table.Shadowed), and Apply
// no longer stores late writes of it; this frees its space. When the table holds nothing newer
// (the usual case: the cluster agreed on the TRUNCATE before writes after it began) it writes
// one range tombstone over the table's span, as DropTable does; otherwise it deletes the
// truncated entries one by one and keeps the newer ones. Writes wait while it decides (it
// holds every purge stripe), so none lands between the scan and the deletion. It is durable
// when it returns, and harmless to repeat.
func (s *Store) TruncateTable(t *schema.Table) (deleted int, err error) {
	at, ok := t.TruncatedAt()
	if !ok {
		return 0, nil
	}
	if err := s.usable(); err != nil {
		return 0, err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return 0, errStoreClosed
	}
	for i := range s.stripes {
		s.stripes[i].Lock()
	}
	defer func() {
		for i := range s.stripes {
			s.stripes[i].Unlock()
		}
	}()
	start, end := tableSpan(t.ID)
	// Pass 1 counts; pass 2, only when newer entries must stay, deletes the older ones.
	var newer bool
	scan := func(fn func(key []byte) error) error {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			c, err := iterCell(it)
			if err != nil {
				it.Close()
				return corrupt(t, it.Key(), err)
			}
			if c.Timestamp > at {
				newer = true
				continue
			}
			if err := fn(it.Key()); err != nil {
				it.Close()
				return err
			}
		}
		return it.Close()
	}
	fail := func(err error) (int, error) { return 0, fmt.Errorf("replica: truncate %s: %w", t.QualifiedName(), err) }
	if err := scan(func([]byte) error { deleted++; return nil }); err != nil {
		return fail(err)
	}
	if deleted == 0 {
		return 0, nil
	}
	if !newer && end != nil {
		// Nothing stays: the table's index entries go too (their build states stay, an empty
		// index being built). With newer entries, the older rows' index entries stay behind
		// as stale entries, which index reads skip.
		b := s.db.NewBatch()
		defer b.Close()
		err := b.DeleteRange(start, end, nil)
		if err == nil {
			is, ie := indexTableSpan(indexPrefix, uint64(t.ID))
			err = b.DeleteRange(is, ie, nil)
		}
		if err == nil {
			err = b.Commit(pebble.Sync)
		}
		if err != nil {
			return fail(err)
		}
		return deleted, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := scan(func(k []byte) error { return b.Delete(k, nil) }); err != nil {
		return fail(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fail(err)
	}
	return deleted, nil
}
