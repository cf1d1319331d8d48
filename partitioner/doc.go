// Package partitioner computes partition tokens exactly as Apache Cassandra's Murmur3Partitioner
// does,
// so that a token-aware driver written for Cassandra routes requests to the replicas that own them.
//
// A partition key is first serialized to bytes with [AppendKey] (one component: its raw bytes;
// several:
// Cassandra's CompositeType encoding), then hashed with [Token]. Both are allocation-free.
//
// It imports nothing of kvnode: it is a leaf that schema, the coordinator and tests share.
package partitioner
