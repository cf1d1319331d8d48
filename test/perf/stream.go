package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/test/proc"
)

// streamSettings are the stream part's sizes: MiB of rows loaded into one node (RF 1), and
// Rounds, each a new pair of nodes, whose medians are taken.
type streamSettings struct {
	MiB    int `json:"mib"`
	Rounds int `json:"rounds"`
}

// The stream part's table, on a one-node cluster that a second node joins.
const (
	streamKeyspace = "perf_stream"
	tableStream    = streamKeyspace + ".t"
	// streamValueBytes is each row's value: random hex, which pebble's block compression
	// barely shrinks, so the bytes on disk are the bytes loaded.
	streamValueBytes = 1000
	streamRowsPerKey = 16
	// streamUnthrottled is the joiner's and the source's --stream-throughput: there is no
	// "off" value, and 1 TiB/s is one.
	streamUnthrottled = 1 << 40
	// joinerWriteTimeout is the joiner's --write-timeout. Before it streams, a joining node
	// waits one write timeout for writes in flight (node.awaitWritesInFlight), inside the
	// window its log times; no client writes through the joiner, so a short one keeps that
	// wait out of the measurement, and the stream's time is the window less it.
	joinerWriteTimeout = 10 * time.Millisecond
	// lwwMergerName is the name of kvnode's merge operator (replica/value.go): sstables for a
	// kvnode store carry it, and pebble opens a store only with a merger of that name.
	lwwMergerName = "kvnode.lww.v1"
)

// streamRound is one round of the stream part: a node loaded, a second one joining it, then
// (both stopped) the local rewrite of the span it took and cp, on a copy of the first's pebble
// directory.
type streamRound struct {
	LoadedMiB  float64 `json:"loaded_mib"`   // key and value bytes written by the load
	LoadS      float64 `json:"load_s"`       // its time (gRPC INSERTs, for information)
	Ranges     int     `json:"ranges"`       // token ranges the joiner took
	StreamMiB  float64 `json:"streamed_mib"` // key and value bytes the joiner received
	StreamS    float64 `json:"stream_s"`     // its "bootstrapping" log line to "bootstrap streamed", less joinerWriteTimeout
	JoinS      float64 `json:"join_s"`       // from its exec to its serving line, for information
	StreamMiBS float64 `json:"stream_mib_per_s"`
	// The span the joiner took, iterated (replica.Store.ScanTokens, as a sender does) and
	// written as sstables of merge operands, one per key span, each synced.
	LocalMiB    float64 `json:"local_mib"`
	LocalS      float64 `json:"local_s"`
	LocalMiBS   float64 `json:"local_rewrite_mib_per_s"`
	LocalSSTMiB float64 `json:"local_sstable_mib"` // the sstables' size on disk
	// cp -r of the whole pebble directory, for information.
	CopyMiB  float64 `json:"cp_mib"`
	CopyS    float64 `json:"cp_s"`
	CopyMiBS float64 `json:"cp_mib_per_s"`
	// OverLocal is StreamMiBS over LocalMiBS.
	OverLocal float64 `json:"stream_over_local_rewrite"`
}

// streamResult is what the stream part measured: its rounds and their medians.
type streamResult struct {
	Rounds     []streamRound `json:"rounds"`
	StreamMiBS float64       `json:"stream_mib_per_s"`
	LocalMiBS  float64       `json:"local_rewrite_mib_per_s"`
	CopyMiBS   float64       `json:"cp_mib_per_s"`
	// OverLocal is the median of the rounds' ratios: stream_over_local_rewrite.
	OverLocal float64 `json:"stream_over_local_rewrite"`
}

// targetStream is issue 36's bound on stream_over_local_rewrite.
const targetStream = 0.5

// streamPart runs s.Stream.Rounds rounds of streamRound and takes the medians.
func streamPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	st := s.Stream
	if st.MiB < 1 || st.Rounds < 1 {
		return fmt.Errorf("stream part: %d MiB and %d rounds, want at least 1 of each", st.MiB, st.Rounds)
	}
	r := &streamResult{}
	var streams, locals, copies, overs []float64
	for round := range st.Rounds {
		sr, err := measureStreamRound(ctx, st.MiB, bin, filepath.Join(root, fmt.Sprintf("stream-%d", round)), log)
		if err != nil {
			return err
		}
		r.Rounds = append(r.Rounds, sr)
		streams, locals, copies, overs = append(streams, sr.StreamMiBS), append(locals, sr.LocalMiBS), append(copies, sr.CopyMiBS), append(overs, sr.OverLocal)
		fmt.Fprintf(log, "perf: stream %d/%d: %.1f MiB streamed in %.2f s (%.0f MiB/s; the joiner served %.1f s after exec), "+
			"local rewrite %.2f s (%.0f MiB/s): %.2f; cp -r of %.1f MiB %.2f s\n",
			round+1, st.Rounds, sr.StreamMiB, sr.StreamS, sr.StreamMiBS, sr.JoinS, sr.LocalS, sr.LocalMiBS, sr.OverLocal, sr.CopyMiB, sr.CopyS)
	}
	r.StreamMiBS, r.LocalMiBS, r.CopyMiBS, r.OverLocal = median(streams), median(locals), median(copies), median(overs)
	res.Stream = r
	return nil
}

// measureStreamRound loads one node (RF 1, --sync=false: the sender only reads) under dir with
// mib MiB of rows, has a second node join it (--sync=true, serve's default; the source sends
// sstables of merge operands, which the joiner syncs, checks and ingests per span, as the local
// rewrite syncs its files) with the stream throttle off and times its bootstrap stream from its log
// (its wait for writes in flight left out: joinerWriteTimeout), then stops both and measures,
// on a copy of the first node's pebble directory, iterating the span the joiner took and
// writing it as sstables, and cp of the directory.
func measureStreamRound(ctx context.Context, mib int, bin, dir string, log io.Writer) (streamRound, error) {
	var r streamRound
	throttle := []string{"--stream-throughput", strconv.Itoa(streamUnthrottled)}
	fmt.Fprintf(log, "perf: stream: starting 1 node, --sync=false, --stream-throughput %d\n", streamUnthrottled)
	pc, err := proc.Start(proc.Options{Binary: bin, Dir: dir, Nodes: 1, NumTokens: numTokens, LogLevel: "info",
		ExtraArgs: [][]string{throttle}})
	stop := func() error {
		if pc == nil {
			return nil
		}
		errs := pc.StopAll()
		pc = nil
		return errors.Join(errs...)
	}
	defer stop()
	if err != nil {
		return r, err
	}
	src := pc.Nodes[0]
	for _, stmt := range []string{
		"CREATE KEYSPACE " + streamKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + tableStream + " " + tableColumns,
	} {
		dctx, cancel := context.WithTimeout(ctx, ddlTimeout)
		_, err := src.Client().Execute(dctx, client.Quorum, stmt)
		cancel()
		if err != nil {
			return r, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	loaded, took, err := loadHexRows(ctx, src.Client(), tableStream, client.One, mib)
	if err != nil {
		return r, err
	}
	r.LoadedMiB, r.LoadS = float64(loaded)/(1<<20), took.Seconds()
	fmt.Fprintf(log, "perf: stream: loaded %.0f MiB in %.1f s\n", r.LoadedMiB, r.LoadS)

	joiner := &proc.Node{Name: "n2", DataDir: filepath.Join(dir, "n2"), LogDir: filepath.Join(dir, "logs"), Binary: bin,
		Seeds: []string{src.GossipAddr}, NumTokens: numTokens, LogLevel: "info", Sync: true,
		ExtraArgs: append([]string{"--write-timeout", joinerWriteTimeout.String()}, throttle...)}
	pc.Nodes = append(pc.Nodes, joiner)
	start := time.Now()
	if err := joiner.Start(); err != nil {
		return r, fmt.Errorf("stream: the joining node: %w", err)
	}
	r.JoinS = time.Since(start).Seconds()
	streamed, streamTook, err := bootstrapFromLog(joiner.Proc().StderrPath())
	if err != nil {
		return r, err
	}
	r.StreamMiB, r.StreamS = float64(streamed)/(1<<20), (streamTook - joinerWriteTimeout).Seconds()
	r.StreamMiBS = ratio(r.StreamMiB, r.StreamS)
	ranges := joinerRanges(cluster.NodeID(src.ID), cluster.NodeID(joiner.ID))
	r.Ranges = len(ranges)
	if err := stop(); err != nil {
		return r, err
	}

	// The local rewrite, on a copy of the source's directory (the nodes stopped).
	srcData := filepath.Join(src.DataDir, "data")
	sc, err := readSchema(src.DataDir)
	if err != nil {
		return r, err
	}
	var ids []schema.TableID
	for _, t := range sc.Tables(streamKeyspace) {
		ids = append(ids, t.ID)
	}
	if len(ids) == 0 {
		return r, fmt.Errorf("stream: no table of %s in %s's schema", streamKeyspace, src.Name)
	}
	cp := filepath.Join(dir, "copy")
	t0 := time.Now()
	if out, err := exec.CommandContext(ctx, "cp", "-r", srcData, cp).CombinedOutput(); err != nil {
		return r, fmt.Errorf("cp -r %s: %v: %s", srcData, err, out)
	}
	r.CopyS = time.Since(t0).Seconds()
	size, err := dirBytes(cp)
	if err != nil {
		return r, err
	}
	r.CopyMiB = float64(size) / (1 << 20)
	r.CopyMiBS = ratio(r.CopyMiB, r.CopyS)
	n, sstBytes, took, err := rewriteLocal(cp, filepath.Join(dir, "sst"), ids, ranges)
	if err != nil {
		return r, err
	}
	r.LocalMiB, r.LocalSSTMiB, r.LocalS = float64(n)/(1<<20), float64(sstBytes)/(1<<20), took.Seconds()
	r.LocalMiBS = ratio(r.LocalMiB, r.LocalS)
	r.OverLocal = ratio(r.StreamMiBS, r.LocalMiBS)
	return r, os.RemoveAll(dir)
}

// loadHexRows writes rows of streamValueBytes random hex into table through c at consistency cl
// until mib MiB of key and value bytes are written, from 32 workers, and returns the bytes and
// the time.
func loadHexRows(ctx context.Context, c *client.Client, table string, cl client.Consistency, mib int) (int64, time.Duration, error) {
	rowBytes := int64(streamValueBytes + 16) // the value and about what the key adds
	rows := (int64(mib) << 20) / rowBytes
	start := time.Now()
	oc := drive(ctx, rows, 32, 0, func(ctx context.Context, i int64) error {
		rng := rand.New(rand.NewPCG(uint64(i), 36))
		var raw [streamValueBytes / 2]byte
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		stmt := fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES ('s-%d', %d, '%s')", table, i/streamRowsPerKey, i%streamRowsPerKey, hex.EncodeToString(raw[:]))
		_, err := c.Execute(ctx, cl, stmt)
		return err
	})
	if oc.Accepted != rows {
		return 0, 0, fmt.Errorf("loading %s: %d of %d rows written; first error: %s", table, oc.Accepted, rows, oc.FirstError)
	}
	return rows * rowBytes, time.Since(start), ctx.Err()
}

// bootstrapFromLog reads a joined node's stderr (slog text, --log-level info): the bytes of
// its "streamed ranges" lines and the time from its "bootstrapping" line to its "bootstrap
// streamed" line.
func bootstrapFromLog(path string) (bytes int64, took time.Duration, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var begin, end time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, `msg="bootstrapping: streaming`):
			begin, err = logTime(line)
		case strings.Contains(line, `msg="bootstrap streamed"`):
			end, err = logTime(line)
		case strings.Contains(line, `msg="streamed ranges"`):
			var n int64
			n, err = strconv.ParseInt(logField(line, "bytes"), 10, 64)
			bytes += n
		}
		if err != nil {
			return 0, 0, fmt.Errorf("stream: %s: %q: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if begin.IsZero() || end.IsZero() || bytes == 0 {
		return 0, 0, fmt.Errorf("stream: %s has no bootstrap lines with bytes (begin %v, end %v, %d bytes)", path, begin, end, bytes)
	}
	return bytes, end.Sub(begin), nil
}

// logField returns the value of key= in an slog text line, "" if none.
func logField(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// logTime returns the time= of an slog text line.
func logTime(line string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, logField(line, "time"))
}

// joinerRanges returns the token ranges a node joining a one-node ring takes from it at RF 1:
// tokens are a pure function of node id and num_tokens.
func joinerRanges(src, joiner cluster.NodeID) []cluster.TokenRange {
	one := cluster.RingNode{ID: src, Tokens: cluster.NodeTokens(src, numTokens)}
	two := cluster.RingNode{ID: joiner, Tokens: cluster.NodeTokens(joiner, numTokens)}
	var out []cluster.TokenRange
	for _, t := range cluster.Transfers(cluster.NewRing([]cluster.RingNode{one}), cluster.NewRing([]cluster.RingNode{one, two}), cluster.Simple(1)) {
		if t.To == joiner {
			out = append(out, t.Range)
		}
	}
	return out
}

// readSchema decodes the schema a node persisted in its data directory (schema.bin).
func readSchema(dataDir string) (*schema.Schema, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "schema.bin"))
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	return schema.Decode(b)
}

// dirBytes returns the size of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// rewriteLocal opens the pebble directory dir read-only (replica.OpenCheckpoint) and writes the
// entries of tables ids in ranges as sstables under out, one per table and key span, each entry a
// merge operand (what an ingesting receiver must get), each file synced; it returns the key and
// value bytes, the sstables' bytes and the time of the scan and writes (each span a sender
// iterates, one sstable each).
func rewriteLocal(dir, out string, ids []schema.TableID, ranges []cluster.TokenRange) (n, sst int64, took time.Duration, err error) {
	st, err := replica.OpenCheckpoint(dir, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer st.Close()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, 0, 0, err
	}
	po := &pebble.Options{FormatMajorVersion: replica.FormatMajorVersion, Merger: &pebble.Merger{Name: lwwMergerName}}
	po.EnsureDefaults()
	wo := po.MakeWriterOptions(0, replica.FormatMajorVersion.MaxTableFormat())
	// A range is the tokens t with Start < t ≤ End, wrapping when End ≤ Start: a wrapping
	// range is two key spans, and each span gets an sstable of its own (sstables ingested
	// together must not overlap).
	var spans [][2]int64
	for _, rg := range ranges {
		switch {
		case rg.Start < rg.End:
			spans = append(spans, [2]int64{rg.Start + 1, rg.End})
		default:
			spans = append(spans, [2]int64{math.MinInt64, rg.End})
			if rg.Start < math.MaxInt64 {
				spans = append(spans, [2]int64{rg.Start + 1, math.MaxInt64})
			}
		}
	}
	start := time.Now()
	file := 0
	for _, id := range ids {
		for _, sp := range spans {
			f, err := vfs.Default.Create(filepath.Join(out, fmt.Sprintf("%06d.sst", file)), vfs.WriteCategoryUnspecified)
			if err != nil {
				return 0, 0, 0, err
			}
			file++
			w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo)
			err = st.ScanTokens(id, sp[0], sp[1], func(k, v []byte) error {
				n += int64(len(k) + len(v))
				return w.Merge(k, v)
			})
			if err = errors.Join(err, w.Close()); err != nil {
				return 0, 0, 0, fmt.Errorf("stream: local rewrite of table %d tokens [%d, %d]: %w", id, sp[0], sp[1], err)
			}
		}
	}
	took = time.Since(start)
	sst, err = dirBytes(out)
	return n, sst, took, err
}

// targets lists issue 36's target on streaming.
func (r *streamResult) targets() []target {
	return []target{{"stream_over_local_rewrite: bootstrap stream MiB/s (throttle off) ≥ 0.5 × iterating the span and writing sstables locally",
		fmt.Sprintf("%.2f (%.0f / %.0f MiB/s; cp %.0f MiB/s)", r.OverLocal, r.StreamMiBS, r.LocalMiBS, r.CopyMiBS),
		r.OverLocal >= targetStream}}
}

// writeText prints the stream part as a Markdown table.
func (r *streamResult) writeText(b *strings.Builder, st streamSettings) {
	fmt.Fprintf(b, "\n## Bootstrap streaming against a local rewrite\n\n")
	fmt.Fprintf(b, "Per round: one node (RF 1, --sync=false) loaded with %d MiB of %d-byte rows; a second node (--sync=true) joins with --stream-throughput %d (off); "+
		"the stream's time is from the joiner's log. Then, both stopped, the same span of a copy of the first node's pebble directory is iterated and written as sstables, "+
		"and the directory copied with cp -r. Medians over %d round(s).\n\n", st.MiB, streamValueBytes, int64(streamUnthrottled), st.Rounds)
	fmt.Fprintf(b, "| round | ranges | streamed MiB | stream s | stream MiB/s | local rewrite s | local MiB/s | sstables MiB | cp MiB | cp s | cp MiB/s | stream / local |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, sr := range r.Rounds {
		fmt.Fprintf(b, "| %d | %d | %.1f | %.2f | %.0f | %.2f | %.0f | %.1f | %.1f | %.2f | %.0f | %.2f |\n", i+1, sr.Ranges, sr.StreamMiB, sr.StreamS, sr.StreamMiBS,
			sr.LocalS, sr.LocalMiBS, sr.LocalSSTMiB, sr.CopyMiB, sr.CopyS, sr.CopyMiBS, sr.OverLocal)
	}
	fmt.Fprintf(b, "| median | | | | %.0f | | %.0f | | | | %.0f | %.2f |\n", r.StreamMiBS, r.LocalMiBS, r.CopyMiBS, r.OverLocal)
}
