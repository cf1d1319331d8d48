//go:build linux

package fault

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/test/proc"
)

// Nemesis is one kind of fault. Start injects it into a running cluster; Heal undoes it and is
// idempotent: it may be called without Start, or twice (tests call it again from t.Cleanup, so
// no fault outlives its test).
type Nemesis interface {
	Name() string
	Start(ctx context.Context, c *Cluster) error
	Heal(ctx context.Context, c *Cluster) error
}

// nft tables the nemeses make inside a node's namespace.
const (
	cutTable  = "kvfault_cut"
	lossTable = "kvfault_loss"
)

// nftDrop installs table in ns: packets to or from ips are dropped in both directions.
func nftDrop(ctx context.Context, ns Netns, table string, ips []string) error {
	set := "{ " + strings.Join(ips, ", ") + " }"
	rules := fmt.Sprintf(`table inet %[1]s {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr %[2]s drop
	}
	chain output {
		type filter hook output priority 0; policy accept;
		ip daddr %[2]s drop
	}
}
`, table, set)
	_, err := ns.Exec(ctx, rules, "nft", "-f", "-")
	return err
}

// nftDelete removes table from ns; a table that is not there is not an error (declaring it
// first makes the delete always find it).
func nftDelete(ctx context.Context, ns Netns, table string) error {
	_, err := ns.Exec(ctx, fmt.Sprintf("table inet %[1]s {}\ndelete table inet %[1]s\n", table), "nft", "-f", "-")
	return err
}

// Partition cuts one node off from every other node: nft rules in its namespace drop what it
// sends to and receives from their addresses. Clients still reach it, so it keeps coordinating
// (and failing) requests, as an isolated node does for clients on its side.
type Partition struct{ Node int }

func (p Partition) Name() string { return fmt.Sprintf("partition n%d", p.Node+1) }

func (p Partition) Start(ctx context.Context, c *Cluster) error {
	var others []string
	for i := range c.Size() {
		if i != p.Node {
			others = append(others, NodeIP(i))
		}
	}
	return nftDrop(ctx, c.NS[p.Node], cutTable, others)
}

func (p Partition) Heal(ctx context.Context, c *Cluster) error {
	return nftDelete(ctx, c.NS[p.Node], cutTable)
}

// Bridge cuts nodes A and B from each other while both still reach every other node (Jepsen's
// bridge: the third node is the only link between the two halves).
type Bridge struct{ A, B int }

func (b Bridge) Name() string { return fmt.Sprintf("bridge n%d-/-n%d", b.A+1, b.B+1) }

func (b Bridge) Start(ctx context.Context, c *Cluster) error {
	return errors.Join(nftDrop(ctx, c.NS[b.A], cutTable, []string{NodeIP(b.B)}), nftDrop(ctx, c.NS[b.B], cutTable, []string{NodeIP(b.A)}))
}

func (b Bridge) Heal(ctx context.Context, c *Cluster) error {
	return errors.Join(nftDelete(ctx, c.NS[b.A], cutTable), nftDelete(ctx, c.NS[b.B], cutTable))
}

// Loss drops Percent of the packets a node sends and receives on its link (nft's numgen: the
// kernel here has no netem).
type Loss struct{ Node, Percent int }

func (l Loss) Name() string { return fmt.Sprintf("loss %d%% n%d", l.Percent, l.Node+1) }

func (l Loss) Start(ctx context.Context, c *Cluster) error {
	if l.Percent < 1 || l.Percent > 100 {
		return fmt.Errorf("fault: Loss.Percent is %d, want 1 to 100", l.Percent)
	}
	sample := fmt.Sprintf("numgen random mod 100 lt %d ", l.Percent) // numgen's range is 0-99
	if l.Percent == 100 {
		sample = ""
	}
	rules := fmt.Sprintf(`table inet %[1]s {
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "eth0" %[2]sdrop
	}
	chain output {
		type filter hook output priority 0; policy accept;
		oifname "eth0" %[2]sdrop
	}
}
`, lossTable, sample)
	_, err := c.NS[l.Node].Exec(ctx, rules, "nft", "-f", "-")
	return err
}

func (l Loss) Heal(ctx context.Context, c *Cluster) error {
	return nftDelete(ctx, c.NS[l.Node], lossTable)
}

// Bandwidth limits a node's link to Rate (tc's notation, e.g. "256kbit") in both directions: a
// token bucket (tbf) on the node's end of the veth pair and on the switch's end.
type Bandwidth struct {
	Node int
	Rate string
}

func (b Bandwidth) Name() string { return fmt.Sprintf("bandwidth %s n%d", b.Rate, b.Node+1) }

// links are the two ends of the node's veth pair: (namespace, device).
func (b Bandwidth) links(c *Cluster) [][2]string {
	return [][2]string{{c.NS[b.Node].Name, "eth0"}, {c.Switch.Name, fmt.Sprintf("v%d", b.Node+1)}}
}

func (b Bandwidth) Start(ctx context.Context, c *Cluster) error {
	for _, l := range b.links(c) {
		if _, err := run(ctx, "", "ip", "netns", "exec", l[0], "tc", "qdisc", "replace", "dev", l[1], "root",
			"tbf", "rate", b.Rate, "burst", "32kbit", "latency", "400ms"); err != nil {
			return err
		}
	}
	return nil
}

func (b Bandwidth) Heal(ctx context.Context, c *Cluster) error {
	var errs []error
	for _, l := range b.links(c) {
		out, err := run(ctx, "", "ip", "netns", "exec", l[0], "tc", "qdisc", "show", "dev", l[1], "root")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !strings.Contains(string(out), "tbf") {
			continue
		}
		if _, err := run(ctx, "", "ip", "netns", "exec", l[0], "tc", "qdisc", "del", "dev", l[1], "root"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Delay holds back every internode byte sent to or from a node by D, in the internode proxy
// (the cluster needs Options.InternodeProxy): a slow replica and a slow coordinator.
type Delay struct {
	Node int
	D    time.Duration
}

func (d Delay) Name() string { return fmt.Sprintf("delay %v n%d", d.D, d.Node+1) }

func (d Delay) set(c *Cluster, by time.Duration) error {
	if c.Proxy == nil {
		return errors.New("fault: the delay nemesis needs a cluster started with Options.InternodeProxy")
	}
	for i := range c.Size() {
		if i != d.Node {
			c.Proxy.SetDelay(NodeIP(d.Node), NodeIP(i), by)
		}
	}
	return nil
}

func (d Delay) Start(_ context.Context, c *Cluster) error { return d.set(c, d.D) }
func (d Delay) Heal(_ context.Context, c *Cluster) error  { return d.set(c, 0) }

// Pause stops a node's process with SIGSTOP; Heal continues it.
type Pause struct{ Node int }

func (p Pause) Name() string { return fmt.Sprintf("pause n%d", p.Node+1) }

func (p Pause) Start(_ context.Context, c *Cluster) error {
	return signal(c.Node(p.Node), syscall.SIGSTOP)
}

func (p Pause) Heal(_ context.Context, c *Cluster) error {
	return signal(c.Node(p.Node), syscall.SIGCONT)
}

func signal(n *proc.Node, sig syscall.Signal) error {
	if !n.Running() {
		return nil
	}
	if err := syscall.Kill(n.Proc().Pid(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: %v: %w", n.Name, sig, err)
	}
	return nil
}

// Kill SIGKILLs a node; Heal restarts it on the same data directory and addresses.
type Kill struct{ Node int }

func (k Kill) Name() string { return fmt.Sprintf("kill -9 n%d", k.Node+1) }

func (k Kill) Start(_ context.Context, c *Cluster) error { return c.Node(k.Node).Kill() }

func (k Kill) Heal(_ context.Context, c *Cluster) error { return ensureRunning(c.Node(k.Node)) }

// ensureRunning starts the node if its process is not running.
func ensureRunning(n *proc.Node) error {
	if n.Running() {
		return nil
	}
	return n.Start()
}

// stopNode stops a node with SIGTERM (SIGKILL after proc.StopGrace).
func stopNode(n *proc.Node) error {
	n.CloseClient()
	if !n.Running() {
		return nil
	}
	if err := n.Proc().Terminate(); err != nil {
		return fmt.Errorf("%s: SIGTERM: %w", n.Name, err)
	}
	if !n.Proc().WaitExit(proc.StopGrace) {
		return errors.Join(fmt.Errorf("%s was still running %v after SIGTERM", n.Name, proc.StopGrace), n.Kill())
	}
	return nil
}

// ClockOffset restarts a node (SIGTERM, then the same data directory) with its clock shifted
// by Offset (serve's hidden --testing-clock-offset: the limiter, write timestamps, deadlines and
// the clock gossip reports); Heal restarts it with the true clock.
type ClockOffset struct {
	Node   int
	Offset time.Duration
}

func (o ClockOffset) Name() string { return fmt.Sprintf("clock %+v n%d", o.Offset, o.Node+1) }

func (o ClockOffset) Start(_ context.Context, c *Cluster) error {
	return restartWith(c.Node(o.Node), "--testing-clock-offset=", o.Offset.String())
}

func (o ClockOffset) Heal(_ context.Context, c *Cluster) error {
	return restartWithout(c.Node(o.Node), "--testing-clock-offset=")
}

// GossipDelay restarts a node with every gossip packet and stream it sends delayed by D (serve's
// hidden --testing-gossip-delay, a memberlist Transport wrapper: cluster/gossipdelay.go); Heal
// restarts it without. Gossip is UDP and TCP on its own port, so the internode delay proxy does
// not reach it.
type GossipDelay struct {
	Node int
	D    time.Duration
}

func (g GossipDelay) Name() string { return fmt.Sprintf("gossip delay %v n%d", g.D, g.Node+1) }

func (g GossipDelay) Start(_ context.Context, c *Cluster) error {
	return restartWith(c.Node(g.Node), "--testing-gossip-delay=", g.D.String())
}

func (g GossipDelay) Heal(_ context.Context, c *Cluster) error {
	return restartWithout(c.Node(g.Node), "--testing-gossip-delay=")
}

// restartWith restarts n (SIGTERM, then the same data directory) with the serve flag flag (a
// "--name=" prefix) set to value.
func restartWith(n *proc.Node, flag, value string) error {
	if err := stopNode(n); err != nil {
		return err
	}
	n.ExtraArgs = append(without(n.ExtraArgs, flag), flag+value)
	return n.Start()
}

// restartWithout restarts n without the serve flag flag, if it has it; it makes sure n runs.
func restartWithout(n *proc.Node, flag string) error {
	if !slices.ContainsFunc(n.ExtraArgs, func(a string) bool { return strings.HasPrefix(a, flag) }) {
		return ensureRunning(n)
	}
	if err := stopNode(n); err != nil {
		return err
	}
	n.ExtraArgs = without(n.ExtraArgs, flag)
	return n.Start()
}

// without returns args less those that start with flag.
func without(args []string, flag string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, flag) })
}

// DiskFull fills the filesystem of a node's data directory (a tmpfs: Options.TmpfsMiB) with a
// file, then waits (up to SeenDownWait) until every other node sees it down: under its free-space
// reserve, it tells its peers it cannot take writes, and they treat it as down (issue 29). Heal
// removes the file. When a write of the node met the full disk before its reserve check could
// refuse it (the filler takes the last bytes at once, and a write-ahead log that meets ENOSPC
// is fatal to pebble), its storage failed and disk_failure_policy stop stopped it serving; Heal
// then does what docs/operations.md says, SIGTERM and a restart, and says so (StorageFailed).
type DiskFull struct {
	Node int
	// Leave is how many bytes the filler leaves free: 0 fills the disk to the last byte; a
	// little under the node's reserve (3.2 MiB of a 64 MiB tmpfs) lets its reserve check refuse
	// writes before a write meets ENOSPC.
	Leave uint64
	// SeenDown is how long after the disk was full (the filler met ENOSPC) every other node saw
	// the node down; Filling is how long filling took. SeenErr is why they did not, if they
	// did not within SeenDownWait.
	SeenDown, Filling time.Duration
	SeenErr           error
	// Terminated is how long the node took to exit on SIGTERM with its disk full again
	// (terminateFull).
	Terminated time.Duration
	// StorageFailed is set when the node's storage failed on the full disk, and Heal restarted
	// it.
	StorageFailed bool
}

const fillerName = "kvfault-filler"

// SeenDownWait bounds DiskFull's wait for the peers to see the full node down.
const SeenDownWait = 60 * time.Second

func (d *DiskFull) Name() string {
	if d.Leave > 0 {
		return fmt.Sprintf("disk full n%d (%d KiB left)", d.Node+1, d.Leave>>10)
	}
	return fmt.Sprintf("disk full n%d", d.Node+1)
}

func (d *DiskFull) Start(ctx context.Context, c *Cluster) error {
	began := time.Now()
	if err := d.fill(c); err != nil {
		return err
	}
	full := time.Now()
	d.Filling = full.Sub(began)
	d.SeenErr = c.Proc.WaitStates(ctx, SeenDownWait, d.others(c), d.down(c))
	d.SeenDown = time.Since(full)
	return nil
}

// terminateFull fills the node's disk again, once the scenario is over, waits until the others
// see it down, stops it with SIGTERM (which a full disk must not hold up: issue 29), frees the
// disk and starts it again, and waits until every node sees every other up.
func (d *DiskFull) terminateFull(ctx context.Context, c *Cluster) error {
	n := c.Node(d.Node)
	if err := d.fill(c); err != nil {
		return err
	}
	defer d.Heal(ctx, c)
	if err := c.Proc.WaitStates(ctx, SeenDownWait, d.others(c), d.down(c)); err != nil {
		return fmt.Errorf("filled again, n%d: %w", d.Node+1, err)
	}
	n.CloseClient()
	start := time.Now()
	if err := n.Proc().Terminate(); err != nil {
		return fmt.Errorf("n%d: SIGTERM: %w", d.Node+1, err)
	}
	if !n.Proc().WaitExit(proc.StopGrace) {
		return errors.Join(fmt.Errorf("n%d, its disk full, was still running %v after SIGTERM", d.Node+1, proc.StopGrace), n.Kill())
	}
	d.Terminated = time.Since(start)
	if err := d.Heal(ctx, c); err != nil {
		return err
	}
	if err := n.Start(); err != nil {
		return fmt.Errorf("restart n%d after its disk was freed: %w", d.Node+1, err)
	}
	return c.Proc.WaitStates(ctx, SeenDownWait, c.Proc.Nodes, c.Proc.AllUp())
}

// others returns the nodes other than the full one.
func (d *DiskFull) others(c *Cluster) []*proc.Node {
	var out []*proc.Node
	for i, n := range c.Proc.Nodes {
		if i != d.Node {
			out = append(out, n)
		}
	}
	return out
}

// down is the member states of a cluster whose full node is down.
func (d *DiskFull) down(c *Cluster) map[string]string {
	want := c.Proc.AllUp()
	want[c.Node(d.Node).ID] = "DOWN"
	return want
}

// fill writes the filler until the disk is full.
func (d *DiskFull) fill(c *Cluster) error {
	f, err := os.OpenFile(filepath.Join(c.Node(d.Node).DataDir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		chunk := buf
		if d.Leave > 0 {
			var st syscall.Statfs_t
			if err := syscall.Statfs(c.Node(d.Node).DataDir, &st); err != nil {
				return fmt.Errorf("fill the disk of n%d: %w", d.Node+1, err)
			}
			free := st.Bavail * uint64(st.Bsize)
			if free <= d.Leave {
				return nil
			}
			chunk = buf[:min(uint64(len(buf)), free-d.Leave)]
		}
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill the disk of n%d: %w", d.Node+1, err)
		}
	}
}

func (d *DiskFull) Heal(_ context.Context, c *Cluster) error {
	n := c.Node(d.Node)
	err := os.Remove(filepath.Join(n.DataDir, fillerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || !n.Running() || !storageFailed(n) {
		return err
	}
	d.StorageFailed = true
	if err := stopNode(n); err != nil {
		return err
	}
	return n.Start()
}

// storageFailed reports whether the node's current process logged that its storage failed.
func storageFailed(n *proc.Node) bool {
	data, err := os.ReadFile(n.Proc().StderrPath())
	return err == nil && strings.Contains(string(data), `msg="storage failed:`)
}

// Corrupt SIGKILLs a node, writes 64 random bytes into the middle of its newest storage file of
// one type (File: "wal", the newest *.log, or "sst", the newest *.sst, waiting for one to be
// written first) and restarts it; the end of the file is left intact. Heal only makes sure the
// node runs.
type Corrupt struct {
	Node int
	File string
	// Damaged is the file Start damaged, and at which offset (for the log).
	Damaged string
	// Refused is why the node did not start on its damaged log, nil if it did.
	Refused error
}

func (k *Corrupt) Name() string { return fmt.Sprintf("corrupt %s n%d", k.File, k.Node+1) }

func (k *Corrupt) Start(ctx context.Context, c *Cluster) error {
	n := c.Node(k.Node)
	ext := map[string]string{"wal": ".log", "sst": ".sst"}[k.File]
	if ext == "" {
		return fmt.Errorf("fault: Corrupt.File is %q, want wal or sst", k.File)
	}
	// The node's own store is data/; hints and the batchlog have stores of their own. An
	// sstable appears once a memtable is flushed: the scenario gives the node a small one.
	dir := filepath.Join(n.DataDir, "data")
	var newest string
	var size int64
	find := func() error {
		files, err := filepath.Glob(filepath.Join(dir, "*"+ext))
		if err != nil {
			return err
		}
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil || st.Size() < 256 {
				continue
			}
			if newest == "" || filepath.Base(f) > filepath.Base(newest) {
				newest, size = f, st.Size()
			}
		}
		if newest == "" {
			return fmt.Errorf("no %s file of 256 bytes or more (%v)", ext, files)
		}
		return nil
	}
	if err := poll.Until(ctx, 60*time.Second, fmt.Sprintf("n%d has a %s file in %s", k.Node+1, ext, dir), find); err != nil {
		return err
	}
	if err := n.Kill(); err != nil {
		return err
	}
	newest = ""
	if err := find(); err != nil { // the newest once the node is gone
		return err
	}
	junk := make([]byte, 64)
	if _, err := io.ReadFull(rand.Reader, junk); err != nil {
		return err
	}
	f, err := os.OpenFile(newest, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteAt(junk, size/2)
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	k.Damaged = fmt.Sprintf("%s (%d bytes) at offset %d", filepath.Base(newest), size, size/2)
	err = n.Start()
	if err != nil {
		// Expected: a node refuses to start on a log damaged in the middle, or on a corrupt
		// sstable. Heal brings it back the way docs/operations.md says.
		k.Refused = err
		return nil
	}
	return nil
}

// Heal makes sure the node runs. A node that refused to start on its damaged log is brought
// back as docs/operations.md says ("A corrupt write-ahead log"): started with
// --start-despite-corrupt-log, which quarantines the log and serves no reads until repaired,
// then `kvnode repair` run on it, from the switch namespace.
func (k *Corrupt) Heal(ctx context.Context, c *Cluster) error {
	n := c.Node(k.Node)
	if k.Refused == nil || n.Running() {
		return ensureRunning(n)
	}
	if k.File == "sst" {
		return k.replace(ctx, c)
	}
	n.ExtraArgs = append(n.ExtraArgs, startDespiteCorruptLog)
	defer func() {
		n.ExtraArgs = slices.DeleteFunc(n.ExtraArgs, func(a string) bool { return a == startDespiteCorruptLog })
	}()
	if err := n.Start(); err != nil {
		return fmt.Errorf("start n%d with %s: %w", k.Node+1, startDespiteCorruptLog, err)
	}
	// The others must see it up before its ranges can be repaired from them.
	err := poll.Until(ctx, 60*time.Second, fmt.Sprintf("n%d repaired", k.Node+1), func() error {
		out, err := c.Switch.Exec(ctx, "", n.Binary, "repair", "--addr", net.JoinHostPort(NodeIP(k.Node), strconv.Itoa(GRPCPort)))
		if err != nil {
			return fmt.Errorf("kvnode repair: %w: %s", err, lastLines(out, 5))
		}
		return nil
	})
	return err
}

// replace brings back a node that refused to start on a corrupt sstable as docs/operations.md
// says ("Replacing a node"): kvnode removenode of its old identity, run on another node (from
// that node's namespace: without logins, topology changes are taken only from the node's own
// host), then a new node with an empty data directory at the same address, which bootstraps
// its ranges from the others.
func (k *Corrupt) replace(ctx context.Context, c *Cluster) error {
	n := c.Node(k.Node)
	if len(n.Seeds) == 0 {
		return fmt.Errorf("n%d is the seed node: a replacement would start a cluster of its own", k.Node+1)
	}
	via := (k.Node + 1) % c.Size()
	addr := net.JoinHostPort(NodeIP(via), strconv.Itoa(GRPCPort))
	err := poll.Until(ctx, 2*time.Minute, fmt.Sprintf("n%d removed", k.Node+1), func() error {
		out, err := c.NS[via].Exec(ctx, "", n.Binary, "removenode", "--addr", addr, n.ID)
		if err != nil {
			return fmt.Errorf("kvnode removenode %s through n%d: %w: %s", n.ID, via+1, err, lastLines(out, 5))
		}
		return nil
	})
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(n.DataDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(n.DataDir, e.Name())); err != nil {
			return err
		}
	}
	n.ID = "" // a new identity
	if err := n.Start(); err != nil {
		return fmt.Errorf("start the replacement of n%d: %w", k.Node+1, err)
	}
	// The read-backs at ALL need it to have bootstrapped: every node up and normal.
	out, err := c.Switch.Exec(ctx, "", n.Binary, "status", "--addr", addr, "--wait-nodes", strconv.Itoa(c.Size()), "--wait", "3m")
	if err != nil {
		return fmt.Errorf("the replacement of n%d did not join: %w: %s", k.Node+1, err, lastLines(out, 8))
	}
	return nil
}

// startDespiteCorruptLog is the serve flag that starts a node on a damaged log.
const startDespiteCorruptLog = "--start-despite-corrupt-log"

// dcTable is the nft table the data-center nemeses make inside each node's namespace.
const dcTable = "kvfault_dc"

// DCLink drops Percent of the packets between the nodes of data centers A and B (100: a cut),
// both directions, while every node still reaches the nodes of its own data center and clients
// reach every node. Each node of A gets nft rules against B's addresses and each node of B
// against A's: gossip and direct internode packets match on their addresses; internode
// connections through the delay proxy (DNAT to the switch) match on conntrack's original
// destination, on the side that opened them, which is enough to stop both directions.
type DCLink struct {
	A, B    string
	Percent int
}

func (l DCLink) Name() string {
	if l.Percent == 100 {
		return fmt.Sprintf("cut %s-/-%s", l.A, l.B)
	}
	return fmt.Sprintf("loss %d%% %s-%s", l.Percent, l.A, l.B)
}

// dcSides returns the nodes of A and of B, or an error when either is empty or they are the same.
func dcSides(c *Cluster, a, b string) ([]int, []int, error) {
	na, nb := c.InDC(a), c.InDC(b)
	if a == b || len(na) == 0 || len(nb) == 0 {
		return nil, nil, fmt.Errorf("fault: data centers %q and %q: want two different data centers with nodes (Options.Places)", a, b)
	}
	return na, nb, nil
}

func (l DCLink) Start(ctx context.Context, c *Cluster) error {
	if l.Percent < 1 || l.Percent > 100 {
		return fmt.Errorf("fault: DCLink.Percent is %d, want 1 to 100", l.Percent)
	}
	na, nb, err := dcSides(c, l.A, l.B)
	if err != nil {
		return err
	}
	sample := fmt.Sprintf("numgen random mod 100 lt %d ", l.Percent)
	if l.Percent == 100 {
		sample = ""
	}
	ips := func(nodes []int) string {
		var s []string
		for _, i := range nodes {
			s = append(s, NodeIP(i))
		}
		return "{ " + strings.Join(s, ", ") + " }"
	}
	var errs []error
	for _, side := range [][2][]int{{na, nb}, {nb, na}} {
		rules := fmt.Sprintf(`table inet %[1]s {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr %[2]s %[3]sdrop
		ct original ip daddr %[2]s %[3]sdrop
	}
	chain output {
		type filter hook output priority 0; policy accept;
		ip daddr %[2]s %[3]sdrop
		ct original ip daddr %[2]s %[3]sdrop
	}
}
`, dcTable, ips(side[1]), sample)
		for _, i := range side[0] {
			if _, err := c.NS[i].Exec(ctx, rules, "nft", "-f", "-"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (l DCLink) Heal(ctx context.Context, c *Cluster) error {
	na, nb, err := dcSides(c, l.A, l.B)
	if err != nil {
		return err
	}
	var errs []error
	for _, i := range append(na, nb...) {
		errs = append(errs, nftDelete(ctx, c.NS[i], dcTable))
	}
	return errors.Join(errs...)
}

// DCDelay sets the internode delay between the nodes of different data centers to D in the
// proxy (the cluster needs Options.WANDelay or InternodeProxy); Heal sets it back to the
// cluster's WANDelay.
type DCDelay struct{ D time.Duration }

func (d DCDelay) Name() string { return fmt.Sprintf("WAN delay %v", d.D) }

func (d DCDelay) Start(_ context.Context, c *Cluster) error {
	if c.Proxy == nil || c.Places == nil {
		return errors.New("fault: the WAN delay nemesis needs a cluster started with Options.Places and Options.WANDelay")
	}
	c.setWANDelay(d.D)
	return nil
}

func (d DCDelay) Heal(_ context.Context, c *Cluster) error {
	if c.Proxy == nil || c.Places == nil {
		return nil
	}
	c.setWANDelay(c.WANDelay)
	return nil
}
