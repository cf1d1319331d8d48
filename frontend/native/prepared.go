package native

import (
	"container/list"
	"sync"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// preparedCache is the node's prepared statements by id, at most max of them: the least
// recently used is dropped to make room (its next EXECUTE is answered Unprepared, and the
// driver prepares it again). Safe for concurrent use.
type preparedCache struct {
	max      int
	maxBytes int64
	bytes    int64 // the entries' entrySize, summed

	// schema, when set, returns the current schema: get drops a statement prepared against
	// tables altered since, at once, not only when schemaChanged hears of the change.
	schema func() *schema.Schema

	mu    sync.Mutex
	byID  map[[16]byte]*list.Element // of *cachedPrepared
	order list.List                  // most recently used first
}

// cachedPrepared is a statement of the cache and the last schema it was found current in.
type cachedPrepared struct {
	p    *coordinator.Prepared
	seen *schema.Schema
}

func newPreparedCache(max int, maxBytes int64, current func() *schema.Schema) *preparedCache {
	return &preparedCache{max: max, maxBytes: maxBytes, byID: map[[16]byte]*list.Element{}, schema: current}
}

// entrySize estimates the memory a prepared statement holds: its text, and its parsed tree,
// which is about as large again, plus a fixed part.
func entrySize(p *coordinator.Prepared) int64 {
	return 2*int64(len(p.Text)) + 512 + 128*int64(len(p.Variables)+len(p.Columns))
}

// put adds or refreshes p.
func (c *preparedCache) put(p *coordinator.Prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[p.ID]; ok {
		c.bytes += entrySize(p) - entrySize(e.Value.(*cachedPrepared).p)
		e.Value = &cachedPrepared{p: p}
		c.order.MoveToFront(e)
	} else {
		c.byID[p.ID] = c.order.PushFront(&cachedPrepared{p: p})
		c.bytes += entrySize(p)
	}
	for c.order.Len() > c.max || (c.bytes > c.maxBytes && c.order.Len() > 1) {
		c.removeLocked(c.order.Back())
	}
}

func (c *preparedCache) removeLocked(e *list.Element) {
	p := e.Value.(*cachedPrepared).p
	c.order.Remove(e)
	delete(c.byID, p.ID)
	c.bytes -= entrySize(p)
}

// schemaChanged drops the statements that read or write a table the change created, updated or
// dropped (or any table of a keyspace it dropped): their bind and result metadata may no longer
// hold, and a driver executing one is answered Unprepared and prepares it again, as Cassandra
// does on DROP TABLE.
func (c *preparedCache) schemaChanged(sc cqlwire.SchemaChange) {
	keyspaceDropped := sc.Target == "KEYSPACE" && sc.Change == "DROPPED"
	if sc.Target != "TABLE" && !keyspaceDropped {
		return
	}
	touches := func(ks, table string) bool {
		return ks == sc.Keyspace && (keyspaceDropped || table == sc.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; {
		next := e.Next()
		p := e.Value.(*cachedPrepared).p
		hit := touches(p.RowsKeyspace, p.RowsTable)
		for _, v := range p.Variables {
			hit = hit || touches(v.Keyspace, v.Table)
		}
		if hit {
			c.removeLocked(e)
		}
		e = next
	}
}

// get returns the statement with id; false for an unknown id or one not 16 bytes long, and
// for a statement prepared against a table altered, truncated or dropped since (which it
// drops: the driver prepares it again).
func (c *preparedCache) get(id []byte) (*coordinator.Prepared, bool) {
	if len(id) != 16 {
		return nil, false
	}
	var cur *schema.Schema
	if c.schema != nil {
		cur = c.schema()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[[16]byte(id)]
	if !ok {
		return nil, false
	}
	cp := e.Value.(*cachedPrepared)
	if cur != nil && cp.seen != cur {
		if !cp.p.Current(cur) {
			c.removeLocked(e)
			return nil, false
		}
		cp.seen = cur
	}
	c.order.MoveToFront(e)
	return cp.p, true
}

// len returns the number of statements held.
func (c *preparedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// currentSchema returns the function that reads ss's current schema, or nil without one.
func currentSchema(ss SchemaSource) func() *schema.Schema {
	if ss == nil {
		return nil
	}
	return ss.Schema
}
