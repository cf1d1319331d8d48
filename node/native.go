package node

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/native"
)

// The executor is the native front end's domain API, with its early limiter decision.
var _ native.Admitter = nativeExecutor{}

// nativeExecutor is the executor as the native front end takes it: its AdmitPrepared answers
// with the front end's AdmittedWrite, and with a nil one (not a nil *shell.AdmittedWrite in an
// interface) when no early decision applies.
type nativeExecutor struct{ *shell.Executor }

func (e nativeExecutor) AdmitPrepared(ctx context.Context, p *coordinator.Prepared, cl coordinator.Consistency, key [][]byte) (native.AdmittedWrite, error) {
	a, err := e.Executor.AdmitPrepared(ctx, p, cl, key)
	if a == nil {
		return nil, err
	}
	return a, err
}

// startNative starts the CQL native protocol server on n.clis.
func (n *Node) startNative() error {
	if a, ok := n.clis.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		// A wildcard listener: publish the gossip host, which peers reach, with its port.
		_, port, _ := net.SplitHostPort(n.clis.Addr().String())
		host, _, _ := net.SplitHostPort(n.cluster.GossipAddr())
		if err := n.cluster.SetNativeAddr(net.JoinHostPort(host, port)); err != nil {
			return err
		}
	}
	srv, err := native.New(n.nativeConfig())
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

// nativeConfig is the native front end's configuration: the node's bounds on its
// connections, and the node's parts it serves.
func (n *Node) nativeConfig() native.Config {
	return native.Config{
		Options:          n.cfg.Native,
		Executor:         nativeExecutor{n.exec},
		MaxFrameSize:     MessageLimit(n.cfg.Coordinator.MaxMutationSize),
		HandshakeTimeout: n.cfg.Listen.HandshakeTimeout,
		Schema:           n.schema,
		Topology:         nativeTopology{c: n.cluster, port: n.clis.Addr().(*net.TCPAddr).Port},
		Logger:           n.cfg.Logger.With("component", "native"),
		Authenticator:    n.nativeAuthenticator(),
		Logins:           n.logins,
		Admission:        n.admission,
	}
}

// CQLAddr returns the CQL native protocol address drivers connect to.
func (n *Node) CQLAddr() string { return n.clis.Addr().String() }

// nativeTopology is the cluster's membership as the native protocol's events name it: each
// peer at the native address it publishes or, for a peer that publishes none, its RPC host with
// this node's native port (drivers expect every node on one port).
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
		addr, ok := hostPort(m.NativeAddr)
		if !ok {
			if rpc, ok := hostPort(m.RPCAddr); ok {
				addr = netip.AddrPortFrom(rpc.Addr(), uint16(t.port))
			} else {
				continue
			}
		}
		out = append(out, native.Peer{ID: string(m.ID), Addr: addr, Live: m.Live})
	}
	return out
}

// hostPort parses an IP host:port, false for anything else (a name, a wildcard, "").
func hostPort(s string) (netip.AddrPort, bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, false
	}
	ip, err := netip.ParseAddr(host)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || ip.IsUnspecified() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), true
}
