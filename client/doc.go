// Package client is the Go client library for kvnode.
//
// A Client sends CQL statements to one kvnode node, which coordinates them across the cluster:
//
//	c, err := client.Dial(ctx, "127.0.0.1:9043")
//	if err != nil { ... }
//	defer c.Close()
//	res, err := c.Execute(ctx, client.Quorum, "SELECT v FROM ks.t WHERE k = 'a'")
//	var rl *client.RateLimitError
//	if errors.As(err, &rl) {
//		// the partition is over its limit: back off for rl.RetryAfter, do not hammer it
//	}
//
// The client never retries on its own. In particular a rate-limit error is final for that
// operation:
// retrying it at once only adds load to the partition that is already over its limit.
//
// It imports only proto/kvnodepb (the client API's wire form) and gRPC: applications link nothing
// of the server.
package client
