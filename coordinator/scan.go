package coordinator

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// RangePartition is one partition of a replica's answer to a page of a token-range scan: its
// token, its key (one component per partition key column) and the replica's page of it.
type RangePartition struct {
	Token int64
	Key   [][]byte
	Page  Page
}

// RangeAnswer is one replica's answer to a page of a token-range scan: the partitions it holds
// anything of, in token order (then by serialized key), and whether it stopped before the end of
// the range (Stopped), after its last partition (inside it when that page is Stopped itself).
type RangeAnswer struct {
	From       NodeID
	Partitions []RangePartition
	Stopped    bool
}

// ReplicaPage is one replica's page of one partition.
type ReplicaPage struct {
	From NodeID
	Page Page
}

// PartitionPages is one partition of a scan page with every answering replica's page of it: a
// replica that returned nothing of it holds nothing of it (an empty page), so that the merge
// can tell what it lacks.
type PartitionPages struct {
	Token int64
	Key   [][]byte
	Pages []ReplicaPage
}

// ComparePartitions orders partitions as a scan returns them, as Cassandra orders decorated
// keys: by token, then by the serialized partition key's bytes.
func ComparePartitions(tokenA int64, keyA [][]byte, tokenB int64, keyB [][]byte) int {
	if c := cmp.Compare(tokenA, tokenB); c != 0 {
		return c
	}
	var a, b [64]byte
	return bytes.Compare(partitioner.AppendKey(a[:0], keyA), partitioner.AppendKey(b[:0], keyB))
}

// GroupRange groups the answers of the replicas asked for one page of a token-range scan of
// table t by partition, in scan order, up to where every answer is known: a replica that stopped
// early scanned nothing after its last partition, so the partitions after the earliest such
// stop are left for the next page (complete is false then, and the last partition returned is
// where it resumes). Each partition carries a page of every replica (empty for one that returned
// nothing of it); a replica that stopped inside the last partition says so in its page, which
// the caller completes with single-partition pages (Merger, NextPage). It checks each answer's
// order and keys.
func GroupRange(t *schema.Table, answers []RangeAnswer) (parts []PartitionPages, complete bool, err error) {
	var (
		bound    *RangePartition // the earliest last partition of an answer that stopped
		boundSet bool
	)
	for _, a := range answers {
		for i := range a.Partitions {
			p := &a.Partitions[i]
			if len(p.Key) != len(t.PartitionKey) {
				return nil, false, fmt.Errorf("coordinator: replica %s returned a partition key of %d components for table %s, want %d", a.From, len(p.Key), t.QualifiedName(), len(t.PartitionKey))
			}
			if i > 0 {
				q := &a.Partitions[i-1]
				if ComparePartitions(q.Token, q.Key, p.Token, p.Key) >= 0 {
					return nil, false, fmt.Errorf("coordinator: replica %s returned the partitions of a scan of table %s out of token order", a.From, t.QualifiedName())
				}
			}
			if p.Page.Stopped && i != len(a.Partitions)-1 {
				return nil, false, fmt.Errorf("coordinator: replica %s stopped inside a partition of a scan of table %s that is not its last", a.From, t.QualifiedName())
			}
		}
		if !a.Stopped {
			continue
		}
		if len(a.Partitions) == 0 {
			return nil, false, fmt.Errorf("coordinator: replica %s stopped a scan of table %s without returning a partition", a.From, t.QualifiedName())
		}
		last := &a.Partitions[len(a.Partitions)-1]
		if !boundSet || ComparePartitions(last.Token, last.Key, bound.Token, bound.Key) < 0 {
			bound, boundSet = last, true
		}
	}
	// Merge the answers' partition lists, each sorted, up to the bound.
	next := make([]int, len(answers))
	for {
		var head *RangePartition
		for i, a := range answers {
			if next[i] < len(a.Partitions) {
				p := &a.Partitions[next[i]]
				if head == nil || ComparePartitions(p.Token, p.Key, head.Token, head.Key) < 0 {
					head = p
				}
			}
		}
		if head == nil || boundSet && ComparePartitions(head.Token, head.Key, bound.Token, bound.Key) > 0 {
			break
		}
		pp := PartitionPages{Token: head.Token, Key: head.Key, Pages: make([]ReplicaPage, len(answers))}
		for i, a := range answers {
			pp.Pages[i] = ReplicaPage{From: a.From, Page: Page{PartitionDeletion: cell.NoTimestamp}}
			if next[i] < len(a.Partitions) {
				if p := &a.Partitions[next[i]]; ComparePartitions(p.Token, p.Key, head.Token, head.Key) == 0 {
					pp.Pages[i].Page = p.Page
					next[i]++
				}
			}
		}
		parts = append(parts, pp)
	}
	return parts, !boundSet, nil
}
