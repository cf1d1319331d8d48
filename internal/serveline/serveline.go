package serveline

import (
	"bytes"
	"fmt"
	"regexp"
	"sync"
)

// Line describes a node that has started serving.
type Line struct {
	ID         string
	Addr       string // gRPC address for clients
	GossipAddr string
	// InternodeAddr is where peers reach the node's internode services.
	InternodeAddr string
	// MetricsAddr is empty when metrics are disabled.
	MetricsAddr string
	DataDir     string
}

// String returns the line as `kvnode serve` prints it (without the newline).
func (l Line) String() string {
	metrics := ""
	if l.MetricsAddr != "" {
		metrics = fmt.Sprintf(", metrics http://%s/metrics", l.MetricsAddr)
	}
	internode := ""
	if l.InternodeAddr != "" {
		internode = ", internode " + l.InternodeAddr
	}
	return fmt.Sprintf("kvnode %s serving clients on %s (gossip %s%s%s, data %s)", l.ID, l.Addr, l.GossipAddr, internode, metrics, l.DataDir)
}

var lineRE = regexp.MustCompile(`^kvnode (\S+) serving clients on (\S+) \(gossip ([^,)]+)(?:, internode ([^,\s]+))?(?:, metrics http://(\S+)/metrics)?, data (.*)\)$`)

// Parse reads a line printed by String. ok is false for any other line.
func Parse(s string) (l Line, ok bool) {
	m := lineRE.FindStringSubmatch(s)
	if m == nil {
		return Line{}, false
	}
	return Line{ID: m[1], Addr: m[2], GossipAddr: m[3], InternodeAddr: m[4], MetricsAddr: m[5], DataDir: m[6]}, true
}

// Watcher is an io.Writer for a serve process's stdout: it finds the serving line and delivers it
// once on Ready. Writes never block, and output after the line is discarded.
type Watcher struct {
	mu    sync.Mutex
	buf   []byte
	seen  bool
	ready chan Line
}

// NewWatcher returns a watcher whose Ready channel receives the serving line.
func NewWatcher() *Watcher { return &Watcher{ready: make(chan Line, 1)} }

// Ready receives the serving line once it has been written.
func (w *Watcher) Ready() <-chan Line { return w.ready }

// Write scans p for the serving line.
func (w *Watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if l, ok := Parse(line); ok {
			w.seen, w.buf = true, nil
			w.ready <- l
			return len(p), nil
		}
	}
}
