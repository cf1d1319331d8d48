package shell

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// ExecuteBatch runs a BATCH (the native protocol's BATCH message): its children, query strings
// or prepared statements with their values, are INSERTs, UPDATEs and DELETEs applied at one
// consistency level with one timestamp (the client's, else the coordinator's; a child's own
// USING TIMESTAMP wins). The writes to one partition of one table are applied as one mutation,
// all or nothing, and the rate limiter counts them as one write of the partition; partitions are
// written one after the other, in the order the batch first names them.
//
// A LOGGED batch (the default) that spans partitions is applied whole, eventually: before any
// partition is written the coordinator stores the batch's mutations, already resolved with
// their timestamps, in the batchlog of up to two other live nodes (itself in a one-node
// cluster) and waits for them; if it then fails part way, those nodes replay the batch to
// every replica of its partitions once it is older than their replay age. A batch no node
// could store fails with *UnavailableError, *TimeoutError or *FailureError before anything is
// written. Once every partition is written the batchlog entries are removed in the
// background. A logged batch is at most max_mutation_size bytes in all, since the batchlog
// stores it as one. An UNLOGGED batch has none of this: one that fails after writing some
// partitions leaves them written. Errors are those of Execute.
func (e *Executor) ExecuteBatch(ctx context.Context, b coordinator.BatchStatement) (coordinator.Result, error) {
	var start time.Time
	if e.observer != nil {
		start = time.Now()
	}
	cl, t, res, err := e.executeBatch(ctx, b)
	if e.observer != nil {
		var ks, name string
		if t != nil {
			ks, name = t.Keyspace, t.Name
		}
		e.observer.OnRequest(ks, name, kindWrite.String(), cl.String(), resultOf(err), time.Since(start))
	}
	if err != nil {
		return coordinator.Result{}, err
	}
	return res, nil
}

func (e *Executor) executeBatch(ctx context.Context, b coordinator.BatchStatement) (coordinator.Consistency, *schema.Table, coordinator.Result, error) {
	cl := b.Consistency
	switch {
	case cl == 0:
		cl = coordinator.One
	case cl == coordinator.Any: // a conditional batch refuses it (anyRefused)
	case !cl.Valid():
		return coordinator.One, nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("unknown consistency level %d (valid: ONE, QUORUM, ALL)", uint8(cl))}
	}
	var logged bool
	switch b.Type {
	case 0, coordinator.BatchLogged: // the zero value is the protocol's default, LOGGED
		logged = true
	case coordinator.BatchUnlogged, coordinator.BatchCounter:
	default:
		return cl, nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("unknown batch type %d (valid: LOGGED, UNLOGGED, COUNTER)", uint8(b.Type))}
	}
	if len(b.Children) == 0 {
		return cl, nil, coordinator.Result{}, &coordinator.InvalidError{Err: errors.New("BATCH has no statements")}
	}
	s := e.schema.Schema()
	writes := make([]*schema.Write, len(b.Children))
	stmts := make([]cql.Statement, len(b.Children))
	var timeout time.Duration
	for i, c := range b.Children {
		stmt, keyspace := cql.Statement(nil), b.Keyspace
		if p := c.Prepared; p != nil {
			if p.Statement == nil {
				return cl, nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("statement %d of the BATCH: the prepared statement has no parsed statement: prepare it with Executor.Prepare", i+1)}
			}
			stmt, keyspace = p.Statement, p.Keyspace
		} else {
			if err := checkStatementSize(c.Text, fmt.Sprintf("statement %d of the BATCH", i+1), e.maxStatement); err != nil {
				return cl, nil, coordinator.Result{}, err
			}
			var err error
			if stmt, err = parseOne(c.Text); err != nil {
				var ie *coordinator.InvalidError
				if errors.As(err, &ie) {
					ie.Err = fmt.Errorf("statement %d of the BATCH: %w", i+1, ie.Err)
				}
				return cl, nil, coordinator.Result{}, err
			}
		}
		switch stmt.(type) {
		case *cql.InsertStmt, *cql.UpdateStmt, *cql.DeleteStmt:
		default:
			return cl, nil, coordinator.Result{}, &coordinator.InvalidError{Pos: stmt.Pos(),
				Err: fmt.Errorf("statement %d of the BATCH is a %s; a BATCH holds only INSERT, UPDATE and DELETE", i+1, schema.StatementName(stmt))}
		}
		w, err := s.BindWriteAt(stmt, keyspace, c.Values, e.now())
		if err != nil {
			return cl, nil, coordinator.Result{}, invalid(stmt, fmt.Errorf("statement %d of the BATCH (%s): %w", i+1, schema.StatementName(stmt), err))
		}
		if w.Timeout > 0 && (timeout == 0 || w.Timeout < timeout) {
			timeout = w.Timeout
		}
		writes[i], stmts[i] = w, stmt
	}
	counters, err := schema.CheckCounterBatch(writes, b.Type == coordinator.BatchCounter, b.Type == coordinator.BatchUnlogged, false) // the protocol's default timestamp is no USING TIMESTAMP
	if err != nil {
		return cl, nil, coordinator.Result{}, &coordinator.InvalidError{Err: err}
	}
	logged = logged && !counters
	if hasConditions(stmts) { // a lightweight transaction (lwt_batch.go)
		if cl == coordinator.Any {
			return cl, nil, coordinator.Result{}, errAnyConditional
		}
		t, res, err := e.executeConditionalBatch(ctx, s, writes, stmts, func(i int) []coordinator.Value { return b.Children[i].Values }, cl, b.SerialConsistency, timeout)
		return cl, t, res, err
	}
	t, res, err := e.runBatch(ctx, s, writes, stmts, logged, cl, b.Timestamp, b.HasTimestamp, timeout)
	return cl, t, res, err
}

// executeBatchStmt runs a BATCH statement (BEGIN BATCH ... APPLY BATCH) with req's values and
// default timestamp, as ExecuteBatch runs the protocol's BATCH.
func (e *Executor) executeBatchStmt(ctx context.Context, st *cql.BatchStmt, keyspace string, cl coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	s := e.schema.Schema()
	b, err := s.BindBatchAt(st, keyspace, req.Values, e.now())
	if err != nil {
		return nil, coordinator.Result{}, invalid(st, err)
	}
	if hasConditions(st.Statements) { // a lightweight transaction (lwt_batch.go)
		return e.executeConditionalBatch(ctx, s, b.Writes, st.Statements, func(int) []coordinator.Value { return req.Values }, cl, req.SerialConsistency, b.Timeout)
	}
	return e.runBatch(ctx, s, b.Writes, st.Statements, !b.Unlogged, cl, req.Timestamp, req.HasTimestamp, b.Timeout)
}

// batchSizeWarn is the size of a batch's mutations above which its Result warns: Cassandra's
// default batch_size_warn_threshold, 5 KiB.
const batchSizeWarn = 5 << 10

// partitionWrites is what a batch writes to one partition of one table.
type partitionWrites struct {
	table *schema.Table
	rf    schema.Replication
	m     *replicapb.Mutation
	pos   cql.Pos // of the first statement writing it, for errors
}

// runBatch applies writes, the statements stmts of a batch, at consistency cl: one mutation per
// partition, with one timestamp for the writes without their own (clientTS when hasClientTS).
// It returns the table of the first write, for the Observer.
func (e *Executor) runBatch(ctx context.Context, s *schema.Schema, writes []*schema.Write, stmts []cql.Statement, logged bool, cl coordinator.Consistency, clientTS int64, hasClientTS bool, timeout time.Duration) (*schema.Table, coordinator.Result, error) {
	if err := e.authorizeWrites(ctx, writes); err != nil {
		return nil, coordinator.Result{}, err
	}
	first := writes[0].Table
	now := e.now()
	var ts int64
	needTS := false
	for i, w := range writes {
		if !w.HasTimestamp && hasClientTS {
			w.Timestamp, w.HasTimestamp = clientTS, true
		}
		if err := e.checkTimestamp(stmts[i], w, now); err != nil {
			return first, coordinator.Result{}, err
		}
		if err := e.checkFormat(stmts[i], w); err != nil {
			return first, coordinator.Result{}, err
		}
		if err := checkWriteSize(w, stmts[i].Pos(), e.maxMutation); err != nil {
			return first, coordinator.Result{}, err
		}
		if err := checkCollections(w, stmts[i].Pos(), e.maxCollection); err != nil {
			return first, coordinator.Result{}, err
		}
		if err := refuseListReads(w, stmts[i].Pos(), "in a BATCH"); err != nil {
			return first, coordinator.Result{}, err
		}
		needTS = needTS || !w.HasTimestamp
	}
	if needTS {
		ts = e.nextTimestamp()
	}

	var groups []*partitionWrites
	index := make(map[string]int, len(writes))
	var keyBuf []byte
	for i, w := range writes {
		keyBuf = binary.BigEndian.AppendUint64(keyBuf[:0], uint64(w.Table.ID))
		keyBuf = partitioner.AppendKey(keyBuf, w.PartitionKey)
		g, ok := index[string(keyBuf)]
		if !ok {
			rf, err := replicationFactor(s, w.Table)
			if err != nil {
				return first, coordinator.Result{}, err
			}
			g = len(groups)
			index[string(keyBuf)] = g
			token := partitioner.Token(partitioner.AppendKey(nil, w.PartitionKey))
			m := &replicapb.Mutation{TableId: uint64(w.Table.ID), PartitionKey: w.PartitionKey, Token: token}
			groups = append(groups, &partitionWrites{table: w.Table, rf: rf, m: m, pos: stmts[i].Pos()})
		}
		wts := w.Timestamp
		if !w.HasTimestamp {
			wts = ts
		}
		var part replicapb.Mutation
		fillMutation(&part, w, wts, now.Unix(), nil)
		m := groups[g].m
		m.Rows = append(m.Rows, part.Rows...)
		m.StaticRow = mergeStaticRows(m.StaticRow, part.StaticRow)
		m.RangeTombstones = append(m.RangeTombstones, part.RangeTombstones...)
		if d := part.PartitionDeletion; d != nil && (m.PartitionDeletion == nil || *d > *m.PartitionDeletion) {
			m.PartitionDeletion = d
		}
	}
	total := 0
	for _, g := range groups {
		size := proto.Size(g.m)
		if size > e.maxMutation {
			return first, coordinator.Result{}, &coordinator.InvalidError{Pos: g.pos, Err: fmt.Errorf("the writes of this BATCH to one partition of %s are %d bytes; the largest write is %d bytes (max_mutation_size)",
				g.table.QualifiedName(), size, e.maxMutation)}
		}
		total += size
	}
	var res coordinator.Result
	if total > batchSizeWarn {
		res.Warnings = append(res.Warnings, fmt.Sprintf("this BATCH is %d bytes, more than %d (Cassandra's batch_size_warn_threshold): a batch is not a way to load data faster; it makes one coordinator and one set of replicas do all the work", total, batchSizeWarn))
	}
	if err := e.judgeBatchScopes(ctx, groups, &res.Warnings); err != nil {
		return first, coordinator.Result{}, err
	}
	dl := deadline(ctx, now, timeoutOr(e.writeTimeout, timeout))
	var (
		logEndpoints []coordinator.NodeID
		logID        []byte
	)
	if logged && len(groups) > 1 {
		if e.batchlog == nil {
			return first, coordinator.Result{}, &coordinator.InvalidError{Pos: groups[1].pos, Err: fmt.Errorf("this LOGGED BATCH writes %d partitions and this coordinator has no batchlog to apply them all or none; use an UNLOGGED BATCH", len(groups))}
		}
		entry := &replicapb.BatchlogEntry{Id: e.newBatchID(), Mutations: make([]*replicapb.Mutation, len(groups))}
		for i, g := range groups {
			entry.Mutations[i] = g.m
		}
		if size := proto.Size(entry); size > e.maxMutation {
			return first, coordinator.Result{}, &coordinator.InvalidError{Pos: groups[0].pos, Err: fmt.Errorf("this LOGGED BATCH is %d bytes; a logged batch is stored whole in the batchlog, so it is at most %d bytes (max_mutation_size): split it, or use an UNLOGGED BATCH",
				size, e.maxMutation)}
		}
		var err error
		if logEndpoints, err = e.storeBatchlog(ctx, entry, cl, dl); err != nil {
			return first, coordinator.Result{}, err
		}
		logID = entry.Id
		if e.beforeBatchApply != nil {
			if err := e.beforeBatchApply(); err != nil {
				return first, coordinator.Result{}, err
			}
		}
	}
	for _, g := range groups {
		if err := e.writePartition(ctx, g.table, g.rf, g.m.Token, partitionWrite{m: g.m, warnings: &res.Warnings}, cl, e.now(), dl); err != nil {
			// The batchlog keeps the batch: its nodes replay it once it is old enough.
			return first, coordinator.Result{}, err
		}
	}
	if logID != nil {
		e.removeBatchlog(logEndpoints, logID)
	}
	return first, res, nil
}

// judgeBatchScopes judges a batch by its budgets: one write per partition it writes, judged
// keyspace by keyspace (in the order the batch first names them) with each keyspace's budgets.
func (e *Executor) judgeBatchScopes(ctx context.Context, groups []*partitionWrites, warnings *[]string) error {
	if e.budgetsOf == nil {
		return nil
	}
	done := make(map[string]bool, 1)
	for i, g := range groups {
		ks := g.table.Keyspace
		if done[ks] {
			continue
		}
		done[ks] = true
		n := 0
		for _, h := range groups[i:] {
			if h.table.Keyspace == ks {
				n++
			}
		}
		if err := e.judgeScopes(ctx, ks, g.table.Name, coordinator.OpWrite, n, warnings); err != nil {
			return err
		}
	}
	return nil
}
