package shell

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// A paging state (coordinator.Result.PagingState) says where a SELECT's last page stopped, so
// that the next page continues there however the partition changed in between (rows written
// before the point are not seen again, rows written after it are). Its form, opaque to
// clients:
//
//	byte      pagingVersion
//	8 bytes   the statement's fingerprint: FNV-1a of its keyspace, text (or prepared ID) and
//	          bound values, so that a state is refused by any other statement
//	uvarint   rows returned by the earlier pages (the statement's LIMIT counts across pages)
//	uvarint   n, the number of clustering components of the last row returned
//	n times   uvarint length, then the component's bytes
//
// The replicas' reads resume after that clustering key, in the read's order (ORDER BY DESC
// included), as the coordinator's own paging through a replica's answer does.
const pagingVersion = 1

// maxPagingState bounds the size of a paging state a client may send: a clustering key's
// components are at most 64 KiB each.
const maxPagingState = 1 << 20

// pageCursor is a decoded paging state: where the next page starts.
type pageCursor struct {
	returned int      // rows the earlier pages returned
	after    [][]byte // the clustering key of the last of them
}

// statementFingerprint identifies the statement and values a paging state belongs to.
func statementFingerprint(req *coordinator.Statement, keyspace string) uint64 {
	h := fnv.New64a()
	var buf [binary.MaxVarintLen64]byte
	write := func(b []byte) {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(b)))])
		h.Write(b)
	}
	if p := req.Prepared; p != nil {
		h.Write([]byte{1})
		write(p.ID[:])
	} else {
		h.Write([]byte{0})
		write([]byte(keyspace))
		write([]byte(req.Text))
	}
	for _, v := range req.Values {
		switch {
		case v.Unset:
			h.Write([]byte{2})
		case v.Bytes == nil:
			h.Write([]byte{3})
		default:
			h.Write([]byte{4})
			write(v.Bytes)
		}
	}
	return h.Sum64()
}

// encodePagingState returns the paging state that continues after row clustering, with
// returned rows returned so far.
func encodePagingState(fingerprint uint64, returned int, clustering [][]byte) []byte {
	n := 1 + 8 + 2*binary.MaxVarintLen64
	for _, c := range clustering {
		n += binary.MaxVarintLen64 + len(c)
	}
	b := make([]byte, 0, n)
	b = append(b, pagingVersion)
	b = binary.BigEndian.AppendUint64(b, fingerprint)
	b = binary.AppendUvarint(b, uint64(returned))
	b = binary.AppendUvarint(b, uint64(len(clustering)))
	for _, c := range clustering {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

var errPagingForeign = errors.New("the paging state belongs to another statement (or other bound values): continue a SELECT only with the paging state its own last page returned")

// decodePagingState decodes a paging state for a read of table t by the statement with the
// given fingerprint. An empty state is the first page.
func decodePagingState(state []byte, fingerprint uint64, t *schema.Table) (pageCursor, error) {
	var cur pageCursor
	if len(state) == 0 {
		return cur, nil
	}
	bad := func(what string) (pageCursor, error) {
		return pageCursor{}, fmt.Errorf("invalid paging state: %s", what)
	}
	if len(state) > maxPagingState {
		return bad(fmt.Sprintf("%d bytes, the most is %d", len(state), maxPagingState))
	}
	if len(state) < 9 || state[0] != pagingVersion {
		return bad("not a paging state of this database")
	}
	if binary.BigEndian.Uint64(state[1:9]) != fingerprint {
		return pageCursor{}, errPagingForeign
	}
	b := state[9:]
	returned, n := uvarint(b)
	if n <= 0 || returned > 1<<31 {
		return bad("malformed row count")
	}
	b = b[n:]
	count, n := uvarint(b)
	if n <= 0 {
		return bad("malformed clustering key")
	}
	b = b[n:]
	if count != uint64(len(t.Clustering)) {
		return bad(fmt.Sprintf("its clustering key has %d components, table %s has %d clustering columns (was the table dropped and created again?)",
			count, t.QualifiedName(), len(t.Clustering)))
	}
	cur.returned = int(returned)
	cur.after = make([][]byte, count)
	for i := range cur.after {
		l, n := uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return bad("truncated clustering key")
		}
		c := t.Clustering[i]
		v := b[n : n+int(l) : n+int(l)]
		if err := c.Type.Check(v); err != nil {
			return bad(fmt.Sprintf("clustering column %s: %v", cql.QuoteIdent(c.Name), err))
		}
		cur.after[i] = v
		b = b[n+int(l):]
	}
	if len(b) != 0 {
		return bad(fmt.Sprintf("%d bytes of trailing garbage", len(b)))
	}
	return cur, nil
}

// uvarint reads a uvarint as binary.Uvarint does, refusing (n 0) one that is not written in
// its shortest form: a paging state has exactly one encoding.
func uvarint(b []byte) (uint64, int) {
	x, n := binary.Uvarint(b)
	if n > 0 && n != len(binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64), x)) {
		return 0, 0
	}
	return x, n
}
