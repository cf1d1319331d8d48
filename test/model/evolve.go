package model

import (
	"context"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/client"
)

// Schema changes in a history: TRUNCATE and a column dropped and added again. Each runs at a
// barrier (Pool.Run has returned: no operation is in flight), through one client at ALL, and
// goes into the model as the deletions it amounts to, at the statement's server timestamp:
//
//   - TRUNCATE t hides every write of t at or before its truncated_at, including those that
//     arrive later (schema.Table.Shadowed), which is exactly a partition deletion of each of
//     t's partitions at that timestamp;
//   - ALTER TABLE t DROP c, then ADD c with the same type, hides every cell of c written at or
//     before the drop, which is a deletion of c in every row of every partition.
//
// The cluster applies them to every replica (TRUNCATE needs every node up; a schema change is
// agreed and installed before the statement returns), so they are recorded at ALL: definite
// for every read. A TRUNCATE refused as unavailable (a node down) is recorded as not applied.

// Truncate truncates t through c and records it.
func (p *Pool) Truncate(ctx context.Context, c *client.Client, t *Table) error {
	stmt := "TRUNCATE " + t.QName()
	lo, hi, err := p.ddl(ctx, c, stmt)
	if err != nil {
		return err
	}
	for _, pk := range t.Partitions {
		p.record(&Op{Seq: -1, Kind: DeletePartition, Table: t, PK: pk, CL: client.All, Stmt: stmt,
			Outcome: Outcome{Sent: true, Lo: lo, Hi: hi}})
	}
	return nil
}

// DropAndAddColumn drops t's regular column col and adds it again, and records the drop.
func (p *Pool) DropAndAddColumn(ctx context.Context, c *client.Client, t *Table, col int) error {
	rc := t.Regular[col]
	stmt := fmt.Sprintf("ALTER TABLE %s DROP %s", t.QName(), rc.Name)
	lo, hi, err := p.ddl(ctx, c, stmt)
	if err != nil {
		return err
	}
	rows := t.allRows()
	for _, pk := range t.Partitions {
		for _, ck := range rows {
			p.record(&Op{Seq: -1, Kind: DeleteCells, Table: t, PK: pk, Row: ck, Cols: []int{col}, CL: client.All, Stmt: stmt,
				Outcome: Outcome{Sent: true, Lo: lo, Hi: hi}})
		}
	}
	_, _, err = p.ddl(ctx, c, fmt.Sprintf("ALTER TABLE %s ADD %s %s", t.QName(), rc.Name, rc.Type))
	return err
}

// ddl runs a schema statement and returns the wall-clock interval around it (its server
// timestamp lies inside). It fails on any error: a history cannot go on past a schema change
// that may or may not have happened.
func (p *Pool) ddl(ctx context.Context, c *client.Client, stmt string) (lo, hi int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lo = time.Now().UnixMicro()
	_, err = c.Execute(ctx, client.All, stmt)
	hi = time.Now().UnixMicro()
	if err != nil {
		return 0, 0, fmt.Errorf("model: seed %d: %s: %w", p.W.Seed, stmt, err)
	}
	return lo, hi, nil
}

// record adds a schema change's deletion to the model of the worker owning its partition.
func (p *Pool) record(op *Op) {
	r := p.worker(op)
	r.M.Record(op)
	r.lastHi = max(r.lastHi, op.Outcome.Hi)
}
