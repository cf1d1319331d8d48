package native

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// TestRateLimitFrameEncodesAsTheError checks that the fast path's rejection frame is, byte for
// byte, the ERROR rateLimitAnswer builds, whether the client opted in to ScyllaDB's rate-limit
// error or not, and that the message names the table and the partition.
func TestRateLimitFrameEncodesAsTheError(t *testing.T) {
	rls := []*coordinator.RateLimitError{
		{Keyspace: "ks", Table: "hot", Op: schema.OpWrite, RejectedBy: coordinator.RejectedByCoordinator, Limit: 50, RetryAfter: 1234 * time.Millisecond},
		{Keyspace: "ks", Table: "hot", Op: schema.OpRead, RejectedBy: coordinator.RejectedByReplicas, Limit: 7, Count: 30, MayBeApplied: true, Partition: "(k) = ('a')"},
		{Table: "t", Op: schema.OpWrite, RejectedBy: coordinator.RejectedByReplicas, Limit: 1, RetryAfter: 750 * time.Millisecond},
		{Keyspace: "ks", Op: schema.OpWrite, Scope: coordinator.ScopeServiceLevel, ScopeName: "gold", Limit: 100, RetryAfter: 90 * time.Second},
		{Keyspace: "ks", Table: strings.Repeat("x", 200), Op: schema.OpWrite, Limit: 1 << 31},
	}
	for _, optIn := range []bool{false, true} {
		c := &conn{}
		c.rateLimit.Store(optIn)
		for _, rl := range rls {
			want := cqlwire.AppendFrame(nil, 7, rateLimitAnswer(c, rl), cqlwire.FrameOptions{})
			got := cqlwire.AppendFrame(nil, 7, newRateLimitFrame(c, rl), cqlwire.FrameOptions{})
			if !bytes.Equal(got, want) {
				t.Errorf("opt-in %v, %q:\n got  %x\n want %x", optIn, rl.Error(), got, want)
			}
			h, body, err := cqlwire.NewFrameReader(bytes.NewReader(got), cqlwire.ReaderOptions{Responses: true}).ReadFrame()
			if err != nil {
				t.Fatalf("the frame does not read: %v", err)
			}
			f, err := cqlwire.DecodeFrame(h, body)
			if err != nil {
				t.Fatalf("the frame does not decode: %v", err)
			}
			e := f.Message.(*cqlwire.Error)
			if e.Message != rl.Error() || (optIn != (e.Code == cqlwire.ErrRateLimit)) {
				t.Errorf("opt-in %v: decoded %+v, want the message %q", optIn, e, rl.Error())
			}
			if rl.Partition != "" && !strings.Contains(e.Message, rl.Partition) {
				t.Errorf("message %q does not name the partition %s", e.Message, rl.Partition)
			}
		}
	}
}
