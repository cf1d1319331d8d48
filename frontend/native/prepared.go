package native

import (
	"container/list"
	"sync"

	"github.com/kvnode/kvnode/coordinator"
)

// preparedCache is the node's prepared statements by id, at most max of them: the least
// recently used is dropped to make room (its next EXECUTE is answered Unprepared, and the
// driver prepares it again). Safe for concurrent use.
type preparedCache struct {
	max int

	mu    sync.Mutex
	byID  map[[16]byte]*list.Element // of *coordinator.Prepared
	order list.List                  // most recently used first
}

func newPreparedCache(max int) *preparedCache {
	return &preparedCache{max: max, byID: map[[16]byte]*list.Element{}}
}

// put adds or refreshes p.
func (c *preparedCache) put(p *coordinator.Prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[p.ID]; ok {
		e.Value = p
		c.order.MoveToFront(e)
		return
	}
	c.byID[p.ID] = c.order.PushFront(p)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*coordinator.Prepared).ID)
	}
}

// get returns the statement with id; false for an unknown id or one not 16 bytes long.
func (c *preparedCache) get(id []byte) (*coordinator.Prepared, bool) {
	if len(id) != 16 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[[16]byte(id)]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*coordinator.Prepared), true
}

// len returns the number of statements held.
func (c *preparedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
