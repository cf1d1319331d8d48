package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/native"
)

// startNative starts the CQL native protocol server on n.clis.
func (n *Node) startNative() error {
	srv, err := native.New(native.Config{
		Executor:     nativeExecutor{n.exec},
		MaxFrameSize: MessageLimit(n.cfg.MaxMutationSize),
		Schema:       n.schema,
		Topology:     nativeTopology{c: n.cluster, port: n.clis.Addr().(*net.TCPAddr).Port},
		Logger:       n.cfg.Logger.With("component", "native"),
	})
	if err != nil {
		return err
	}
	n.native = srv
	n.registry.MustRegister(srv.Collector())
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(n.clis); err != nil && !errors.Is(err, native.ErrServerClosed) {
			n.log.Error("native protocol server stopped", "err", err)
		}
	}()
	return nil
}

// CQLAddr returns the CQL native protocol address drivers connect to.
func (n *Node) CQLAddr() string { return n.clis.Addr().String() }

// nativeTopology is the cluster's membership as the native protocol's events name it: each
// peer at its RPC host and this node's native port (drivers expect every node on one port).
type nativeTopology struct {
	c    *cluster.Cluster
	port int
}

func (t nativeTopology) Changed() <-chan struct{} { return t.c.Changed() }

func (t nativeTopology) Peers() []native.Peer {
	var out []native.Peer
	for _, m := range t.c.Members() {
		if m.Local {
			continue
		}
		host, _, err := net.SplitHostPort(m.RPCAddr)
		if err != nil {
			continue
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			continue
		}
		out = append(out, native.Peer{ID: string(m.ID), Addr: netip.AddrPortFrom(ip.Unmap(), uint16(t.port)), Live: m.Live})
	}
	return out
}

// nativeExecutor gives the native front end the executor's domain API.
type nativeExecutor struct{ *shell.Executor }

// Prepare is not implemented by the executor yet.
func (e nativeExecutor) Prepare(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) {
	return nil, &coordinator.InvalidError{Err: fmt.Errorf("prepared statements are not supported yet")}
}

// ExecuteBatch is not implemented by the executor yet.
func (e nativeExecutor) ExecuteBatch(ctx context.Context, b coordinator.BatchStatement) (coordinator.Result, error) {
	return coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("BATCH is not supported yet")}
}
