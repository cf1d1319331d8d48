package node_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/tool/toppartitions"
)

// TestTopPartitionsTableMatchesTheRPC makes partitions hot on both limiter paths (frozen clock:
// the estimates stay put) and reads the cluster's list through node 2 twice: the gRPC API's
// TopPartitions and the native protocol's system.top_partitions (as kvnode toppartitions reads
// it). Both come from the same gathering and merge, so they must agree exactly, keys included.
func TestTopPartitionsTableMatchesTheRPC(t *testing.T) {
	tc, _ := limitedCluster(t)
	c0 := tc.client(0)
	hammerTable(t, c0, "rf3.limited", "hot", 100)
	hammerTable(t, c0, "rf3.limited", "warm", 60)
	key, _ := keyNotOn(t, tc, 0, "one")
	hammerTable(t, c0, "rf1.limited", key, 80)

	c2 := tc.client(2)
	ctx := context.Background()
	cfg := toppartitions.Config{Protocol: toppartitions.ProtocolCQL, Addr: tc.nodes[2].CQLAddr(), Top: 10, Timeout: 10 * time.Second}
	var last string
	poll.Must(t, 10*time.Second, "node 2's system.top_partitions and TopPartitions list the same three partitions", func() error {
		rpc, err := c2.TopPartitions(ctx, "", "", 10)
		if err != nil {
			t.Fatalf("TopPartitions through node 2: %v", err)
		}
		native, err := toppartitions.Execute(ctx, cfg)
		if err != nil {
			t.Fatalf("system.top_partitions through node 2: %v", err)
		}
		n := 0
		for _, tbl := range rpc.Tables {
			n += len(tbl.Partitions)
		}
		last = fmt.Sprintf("gRPC %+v\nnative %+v", rpc, native)
		if n != 3 || !reflect.DeepEqual(rpc, native) {
			return fmt.Errorf("%s", last)
		}
		return nil
	})
	t.Logf("both list:\n%s", last)

	// Narrowed to a keyspace and a table, over the native protocol.
	cfg.Keyspace, cfg.Table, cfg.Top = "rf3", "limited", 1
	res, err := toppartitions.Execute(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 1 || len(res.Tables[0].Partitions) != 1 || fmt.Sprint(res.Tables[0].Partitions[0].Key) != "[hot]" {
		t.Errorf("system.top_partitions of rf3.limited, top 1 = %+v, want only its hot partition", res.Tables)
	}
}
