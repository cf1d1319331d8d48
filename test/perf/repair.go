package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/test/proc"
)

// repairSettings are the repair part's sizes: MiB of rows loaded into a 2-node cluster at RF 2,
// and the percent of partitions deleted from the second node's store before it is repaired.
type repairSettings struct {
	MiB     int `json:"mib"`
	Missing int `json:"missing_percent"`
}

// The repair part's table, on a 2-node cluster at RF 2.
const (
	repairKeyspace = "perf_repair"
	tableRepair    = repairKeyspace + ".t"
	// repairTimeout bounds the repair.
	repairTimeout = 30 * time.Minute
)

// repairResult is what the repair part measured.
type repairResult struct {
	LoadedMiB float64 `json:"loaded_mib"` // key and value bytes written by the load
	LoadS     float64 `json:"load_s"`
	// The second node's store before its rows went missing: its partitions, and those deleted
	// with their key and value bytes.
	StoreMiB          float64 `json:"store_mib"`
	Partitions        int     `json:"partitions"`
	MissingPartitions int     `json:"missing_partitions"`
	MissingMiB        float64 `json:"missing_mib"`
	// The repair run on the second node: its time and what it wrote to replicas.
	RepairS            float64 `json:"repair_s"`
	RangesCompared     uint32  `json:"ranges_compared"`
	PartitionsStreamed uint64  `json:"partitions_streamed"`
	StreamedMiB        float64 `json:"streamed_mib"`
	// MovedOverMissing is StreamedMiB over MissingMiB.
	MovedOverMissing float64 `json:"moved_over_missing"`
	// RepairSPerGiB is RepairS scaled to a GiB of the node's store.
	RepairSPerGiB float64 `json:"repair_s_per_gib"`
}

// repairPart loads a 2-node cluster at RF 2 (--sync=false, the automatic repair off, the stream
// throttle off), stops the second node, deletes Missing % of its partitions from its store
// (every 1/Missing-th in token order, one range deletion each), starts it again and times a
// repair run on it (the Repair service, as `kvnode repair` calls it): its time, and the bytes it
// wrote to replicas against the bytes deleted.
func repairPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	st := s.Repair
	if st.MiB < 1 || st.Missing < 1 || st.Missing > 100 {
		return fmt.Errorf("repair part: %d MiB and %d %% missing, want at least 1 MiB and 1 to 100 %%", st.MiB, st.Missing)
	}
	var r repairResult
	args := []string{"--stream-throughput", strconv.Itoa(streamUnthrottled), "--auto-repair", "off"}
	fmt.Fprintf(log, "perf: repair: starting 2 nodes, --sync=false, %s\n", strings.Join(args, " "))
	pc, err := proc.Start(proc.Options{Binary: bin, Dir: filepath.Join(root, "repair"), Nodes: 2, NumTokens: numTokens, LogLevel: "info",
		ExtraArgs: [][]string{args, args}})
	if pc != nil {
		defer pc.StopAll()
	}
	if err != nil {
		return err
	}
	n1, n2 := pc.Nodes[0], pc.Nodes[1]
	for _, stmt := range []string{
		"CREATE KEYSPACE " + repairKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE " + tableRepair + " " + tableColumns,
	} {
		dctx, cancel := context.WithTimeout(ctx, ddlTimeout)
		_, err := n1.Client().Execute(dctx, client.Quorum, stmt)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	loaded, took, err := loadHexRows(ctx, n1.Client(), tableRepair, client.Quorum, st.MiB)
	if err != nil {
		return err
	}
	r.LoadedMiB, r.LoadS = float64(loaded)/(1<<20), took.Seconds()
	fmt.Fprintf(log, "perf: repair: loaded %.0f MiB at QUORUM in %.1f s\n", r.LoadedMiB, r.LoadS)

	// The second node stopped (SIGTERM: its memtable reaches disk), some of its rows deleted.
	n2.CloseClient()
	if err := n2.Proc().Terminate(); err != nil {
		return err
	}
	if !n2.Proc().WaitExit(time.Minute) {
		return fmt.Errorf("repair: %s did not exit within a minute of SIGTERM", n2.Name)
	}
	if err := deleteSome(n2.DataDir, st.Missing, &r); err != nil {
		return err
	}
	fmt.Fprintf(log, "perf: repair: deleted %d of %d partitions (%.2f of %.0f MiB) from %s's store\n",
		r.MissingPartitions, r.Partitions, r.MissingMiB, r.StoreMiB, n2.Name)
	if err := n2.Start(); err != nil {
		return err
	}
	if err := pc.WaitStates(ctx, time.Minute, pc.Nodes, pc.AllUp()); err != nil {
		return err
	}

	conn, err := grpc.NewClient(n2.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rctx, cancel := context.WithTimeout(ctx, repairTimeout)
	defer cancel()
	start := time.Now()
	resp, err := kvnodepb.NewRepairClient(conn).Repair(rctx, &kvnodepb.RepairRequest{Keyspace: repairKeyspace})
	r.RepairS = time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("repair of %s on %s: %w", repairKeyspace, n2.Name, err)
	}
	var streamed uint64
	for _, t := range resp.GetTables() {
		if t.GetRangesFailed() > 0 {
			return fmt.Errorf("repair of %s.%s on %s: %d ranges failed: %v", t.GetKeyspace(), t.GetTable(), n2.Name, t.GetRangesFailed(), t.GetErrors())
		}
		r.RangesCompared += t.GetRanges()
		r.PartitionsStreamed += t.GetPartitionsStreamed()
		streamed += t.GetBytesStreamed()
	}
	r.StreamedMiB = float64(streamed) / (1 << 20)
	r.MovedOverMissing = ratio(r.StreamedMiB, r.MissingMiB)
	r.RepairSPerGiB = ratio(r.RepairS, r.StoreMiB/1024)
	fmt.Fprintf(log, "perf: repair: %.1f s, %d ranges, %d partitions streamed (%.2f MiB) for %.2f MiB missing: %.2f\n",
		r.RepairS, r.RangesCompared, r.PartitionsStreamed, r.StreamedMiB, r.MissingMiB, r.MovedOverMissing)
	res.Repair = &r
	return nil
}

// deleteSome opens the stopped node's store in dataDir and deletes every (100/missing)-th
// partition of tableRepair in token order, one range deletion per token, recording in r the
// partitions and their key and value bytes, before and deleted.
func deleteSome(dataDir string, missing int, r *repairResult) error {
	sc, err := readSchema(dataDir)
	if err != nil {
		return err
	}
	t, ok := sc.Table(repairKeyspace, "t")
	if !ok {
		return fmt.Errorf("repair: no table %s in %s's schema", tableRepair, dataDir)
	}
	st, err := replica.Open(filepath.Join(dataDir, "data"), replica.Options{})
	if err != nil {
		return err
	}
	type part struct {
		token int64
		bytes int64
	}
	var parts []part
	var total int64
	err = st.ScanTokens(t.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		_, tok, err := replica.EntryToken(k)
		if err != nil {
			return err
		}
		if len(parts) == 0 || parts[len(parts)-1].token != tok {
			parts = append(parts, part{token: tok})
		}
		parts[len(parts)-1].bytes += int64(len(k) + len(v))
		total += int64(len(k) + len(v))
		return nil
	})
	var gone [][2]int64
	var goneBytes int64
	every := 100 / missing
	for i, p := range parts {
		if i%every == every/2 {
			gone = append(gone, [2]int64{p.token, p.token})
			goneBytes += p.bytes
		}
	}
	if err == nil {
		_, err = st.DeleteTokens(t.ID, gone)
	}
	if err = errors.Join(err, st.Close()); err != nil {
		return fmt.Errorf("repair: deleting rows from %s: %w", dataDir, err)
	}
	r.StoreMiB, r.Partitions = float64(total)/(1<<20), len(parts)
	r.MissingPartitions, r.MissingMiB = len(gone), float64(goneBytes)/(1<<20)
	return nil
}

// targets lists issue 36's measure of repair (information: the issue sets no bound).
func (r *repairResult) targets() []target {
	return []target{{"repair of a node missing some rows: seconds, and bytes moved over bytes missing (information)",
		fmt.Sprintf("%.1f s for %.0f MiB (%.0f s/GiB); %.2f MiB moved for %.2f MiB missing: %.2f", r.RepairS, r.StoreMiB, r.RepairSPerGiB, r.StreamedMiB, r.MissingMiB, r.MovedOverMissing),
		true}}
}

// writeText prints the repair part as a Markdown table.
func (r *repairResult) writeText(b *strings.Builder, st repairSettings) {
	fmt.Fprintf(b, "\n## Repair of a node missing %d %% of its partitions\n\n", st.Missing)
	fmt.Fprintf(b, "Two nodes (RF 2, --sync=false, --auto-repair off, stream throttle off) loaded with %d MiB of %d-byte rows at QUORUM; "+
		"the second stopped, %d %% of its partitions deleted from its store, started again and repaired (the Repair service, as `kvnode repair` calls it).\n\n",
		st.MiB, streamValueBytes, st.Missing)
	fmt.Fprintf(b, "| store MiB | partitions | missing | missing MiB | repair s | s per GiB | ranges | partitions streamed | streamed MiB | moved / missing |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(b, "| %.0f | %d | %d | %.2f | %.1f | %.0f | %d | %d | %.2f | %.2f |\n", r.StoreMiB, r.Partitions, r.MissingPartitions, r.MissingMiB,
		r.RepairS, r.RepairSPerGiB, r.RangesCompared, r.PartitionsStreamed, r.StreamedMiB, r.MovedOverMissing)
}
