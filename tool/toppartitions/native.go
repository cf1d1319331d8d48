package toppartitions

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/schema"
)

// topPartitionsWarning starts the warning with which a node names the nodes that did not answer
// a SELECT of system.top_partitions (systables.TopPartitionsWarning; the ids follow, separated
// by ", "). The tool speaks to nodes through the protocol only, so it keeps its own copy; the
// e2e tests check that the two agree.
const topPartitionsWarning = "top_partitions: nodes that did not answer (partitions only they saw hot are missing): "

// topPartitionsQuery reads system.top_partitions, the native protocol's view of the gRPC
// TopPartitions answer.
const topPartitionsQuery = "SELECT keyspace_name, table_name, rank, op, partition_key, key_columns, key_types, token, " +
	"estimated_ops_per_second, limit_per_second, rejected_per_second, rejected_share, would_reject_per_second, nodes FROM system.top_partitions"

// executeNative asks the node at cfg.Addr over the native protocol: one connection (no driver
// discovery of the other nodes: the node asked gathers from them), one SELECT of
// system.top_partitions.
func executeNative(ctx context.Context, cfg Config) (*client.TopPartitionsResult, error) {
	cluster := gocql.NewCluster(cfg.Addr)
	cluster.ProtoVersion = 4
	cluster.Timeout = cfg.Timeout
	cluster.ConnectTimeout = cfg.Timeout
	cluster.DisableInitialHostLookup = true
	cluster.Events.DisableTopologyEvents = true
	cluster.Events.DisableSchemaEvents = true
	cluster.Consistency = gocql.One
	cluster.NumConns = 1
	session, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("toppartitions: connect to %s over the native protocol (--addr names a native address, port 9042 by default; for the gRPC API add --protocol grpc): %w", cfg.Addr, err)
	}
	defer session.Close()

	stmt, args := topPartitionsQuery, []any{}
	if cfg.Keyspace != "" {
		stmt += " WHERE keyspace_name = ?"
		args = append(args, cfg.Keyspace)
		if cfg.Table != "" {
			stmt += " AND table_name = ?"
			args = append(args, cfg.Table)
		}
	}
	iter := session.Query(stmt, args...).WithContext(ctx).Iter()
	res := &client.TopPartitionsResult{}
	var (
		ks, tbl, op                 string
		rank, nodes                 int
		limit                       *int
		key                         []byte
		keyCols, keyTypes           []string
		token                       int64
		ops, rejected, share, would float64
	)
	var rowErr error
	for iter.Scan(&ks, &tbl, &rank, &op, &key, &keyCols, &keyTypes, &token, &ops, &limit, &rejected, &share, &would, &nodes) {
		n := len(res.Tables)
		if n == 0 || res.Tables[n-1].Keyspace != ks || res.Tables[n-1].Table != tbl {
			t := client.TableHotPartitions{Keyspace: ks, Table: tbl}
			for i, name := range keyCols {
				typ := ""
				if i < len(keyTypes) {
					typ = keyTypes[i]
				}
				t.KeyColumns = append(t.KeyColumns, client.Column{Name: name, Type: typ})
			}
			res.Tables = append(res.Tables, t)
			n++
		}
		t := &res.Tables[n-1]
		if len(t.Partitions) >= cfg.Top {
			continue
		}
		p := client.HotPartition{
			Op: client.Op(op), Token: token, EstimatedOpsPerSecond: ops,
			RejectedPerSecond: rejected, RejectedShare: share, WouldRejectPerSecond: would, Nodes: nodes,
		}
		if limit != nil && *limit > 0 {
			p.Limit = uint32(*limit)
		}
		if key != nil {
			var err error
			if p.Key, err = decodeKey(key, keyTypes); err != nil && rowErr == nil {
				rowErr = fmt.Errorf("toppartitions: %s: the key of %s.%s's partition with token %d: %w", cfg.Addr, ks, tbl, token, err)
			}
		}
		t.Partitions = append(t.Partitions, p)
	}
	warnings := iter.Warnings()
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("toppartitions: %s: %w", cfg.Addr, err)
	}
	if rowErr != nil {
		return nil, rowErr
	}
	for _, w := range warnings {
		if ids, ok := strings.CutPrefix(w, topPartitionsWarning); ok {
			res.UnreachableNodes = append(res.UnreachableNodes, strings.Split(ids, ", ")...)
		}
	}
	return res, nil
}

// decodeKey splits a serialized partition key (one component: its bytes; several: Cassandra's
// CompositeType encoding, each component as a 2-byte length, the bytes and an end-of-component
// byte) and decodes each component by its CQL type name.
func decodeKey(key []byte, types []string) ([]any, error) {
	if len(types) == 0 {
		return nil, errors.New("no key column types")
	}
	comps := [][]byte{key}
	if len(types) > 1 {
		comps = comps[:0]
		rest := key
		for len(rest) > 0 {
			if len(rest) < 3 {
				return nil, fmt.Errorf("composite key truncated after %d components", len(comps))
			}
			n := int(binary.BigEndian.Uint16(rest))
			if len(rest) < 2+n+1 {
				return nil, fmt.Errorf("composite key component %d claims %d bytes, %d remain", len(comps)+1, n, len(rest)-3)
			}
			comps = append(comps, rest[2:2+n])
			rest = rest[2+n+1:]
		}
		if len(comps) != len(types) {
			return nil, fmt.Errorf("composite key has %d components, the table's partition key %d", len(comps), len(types))
		}
	}
	out := make([]any, len(comps))
	for i, c := range comps {
		t, err := schema.LookupType(types[i])
		if err != nil {
			return nil, fmt.Errorf("component %d: %w", i+1, err)
		}
		if out[i], err = t.Decode(c); err != nil {
			return nil, fmt.Errorf("component %d: %w", i+1, err)
		}
	}
	return out, nil
}
