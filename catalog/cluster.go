package catalog

import (
	"context"
	"log/slog"
)

// Cluster is what the holder needs of the node's cluster to change the schema and collect its
// tombstones.
type Cluster struct {
	// Self is this node's id: it stamps the versions of the node's changes and its ballots.
	Self string
	// Peers are the members that vote on schema changes.
	Peers Peers
	// Gossip spreads the schema and tells what the members hold.
	Gossip Gossip
	// Logger receives the tombstone collection's records. Nil discards them.
	Logger *slog.Logger
}

// Gossip is how the schema spreads between the members, as the holder sees it: the node
// implements it over cluster membership (the schema push and pull, and the digest each member
// gossips).
type Gossip interface {
	// Publish puts the local schema's digest into this node's gossip and pushes the schema to
	// the live members, without waiting for them.
	Publish() error
	// AwaitAgreement waits, for a bounded time, until the live members gossip this node's
	// digest, and returns the ids of those that had not when the wait ended.
	AwaitAgreement(ctx context.Context) ([]string, error)
	// PublishedDigest returns the schema digest this node gossips now.
	PublishedDigest() string
	// Members returns every member of the ring, down ones included, this node among them.
	Members() []Member
}

// Member is a member of the ring as the tombstone collection sees it.
type Member struct {
	ID           string
	Local        bool   // this node
	Live         bool   // up, as failure detection sees it
	SchemaDigest string // the digest it gossips
	// DataFormat is the data format version it gossips; 0 when it reports none (a release
	// before data format versions, which is format 1).
	DataFormat int
	// DataCenter is the data center it runs in.
	DataCenter string
}
