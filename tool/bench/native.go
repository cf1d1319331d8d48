package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/tlsconfig"
)

// RequestTimeout bounds one request over the native protocol (gocql's ClusterConfig.Timeout);
// the gRPC path bounds operations only by the run's drain deadline.
const RequestTimeout = 10 * time.Second

// noRetry is the driver's retry policy: never retry, so every offered operation is exactly one
// request, as over gRPC. gocql's own policies retry every error on the next host, the
// rate-limit rejection included, which only adds load to the partition over its limit.
type noRetry struct{}

func (noRetry) Attempt(gocql.RetryableQuery) bool  { return false }
func (noRetry) GetRetryType(error) gocql.RetryType { return gocql.Rethrow }

// newCluster returns gocql's configuration for cfg: the contact points, the host selection
// policy of cfg.Coordinator, no retries.
func newCluster(cfg Config) (*gocql.ClusterConfig, error) {
	hosts := cfg.Addrs
	if cfg.Coordinator == Fixed {
		hosts = cfg.Addrs[:1]
	}
	cluster := gocql.NewCluster(hosts...)
	cluster.ProtoVersion = 4
	cluster.Timeout = RequestTimeout
	cluster.ConnectTimeout = DialTimeout
	cluster.RetryPolicy = noRetry{}
	if cfg.Username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: cfg.Username, Password: cfg.Password}
	}
	cl, err := gocqlConsistency(cfg.Consistency)
	if err != nil {
		return nil, err
	}
	cluster.Consistency = cl
	if cfg.TLSCA != "" {
		tlsCfg, err := tlsconfig.ClientConfig(cfg.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		cluster.SslOpts = &gocql.SslOptions{Config: tlsCfg, EnableHostVerification: true}
	}
	switch cfg.Coordinator {
	case TokenAware:
		cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	case RoundRobin:
		cluster.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	case Fixed:
		// Only the first address: no discovery of the others, no topology events adding them.
		cluster.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
		cluster.DisableInitialHostLookup = true
		cluster.Events.DisableTopologyEvents = true
	}
	return cluster, nil
}

// gocqlConsistency maps kvnode's consistency levels to gocql's.
func gocqlConsistency(c client.Consistency) (gocql.Consistency, error) {
	switch c {
	case client.One:
		return gocql.One, nil
	case client.Quorum:
		return gocql.Quorum, nil
	case client.All:
		return gocql.All, nil
	case client.LocalOne:
		return gocql.LocalOne, nil
	case client.LocalQuorum:
		return gocql.LocalQuorum, nil
	case client.Two:
		return gocql.Two, nil
	case client.Three:
		return gocql.Three, nil
	case client.EachQuorum:
		return gocql.EachQuorum, nil
	}
	return 0, fmt.Errorf("bench: --cl %v: want ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM or EACH_QUORUM", c)
}

// nativeSender runs operations over one gocql session; gocql prepares each of the two
// statements once per node and caches it.
type nativeSender struct {
	session *gocql.Session
	wl      *workload
}

func (n *nativeSender) send(ctx context.Context, o *op) error {
	if o.write {
		q := n.session.Query(n.wl.writeStatement(), o.args...).WithContext(ctx)
		err := q.Exec()
		q.Release()
		return err
	}
	q := n.session.Query(n.wl.selectBound, o.args...).WithContext(ctx)
	err := q.Iter().Close()
	q.Release()
	return err
}

// describeNative learns the target table with DESCRIBE TABLE, which kvnode's native server
// answers as one text row holding the CREATE TABLE statement.
func describeNative(ctx context.Context, s *gocql.Session, name cql.TableName) (string, error) {
	qualified := cql.Format(name)
	var desc string
	if err := s.Query("DESCRIBE TABLE " + qualified).WithContext(ctx).Scan(&desc); err != nil {
		return "", fmt.Errorf("bench: describe table %s: %w", qualified, err)
	}
	return desc, nil
}

// nativeErrorKind names the kind of a failed native operation's error (rate limits aside).
func nativeErrorKind(err error, canceled bool) string {
	var (
		un  *gocql.RequestErrUnavailable
		wt  *gocql.RequestErrWriteTimeout
		rt  *gocql.RequestErrReadTimeout
		wf  *gocql.RequestErrWriteFailure
		rf  *gocql.RequestErrReadFailure
		req gocql.RequestError
		// frame is the error gocql returns for the codes it has no type of its own for
		// (Overloaded, Invalid, Syntax, ...): its internal ErrorFrame, which has GetCode
		// rather than RequestError's Code.
		frame interface{ GetCode() int }
	)
	switch {
	case canceled || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return ErrorCanceled
	case errors.As(err, &un):
		return ErrorUnavailable
	case errors.As(err, &wt), errors.As(err, &rt), errors.Is(err, gocql.ErrTimeoutNoResponse):
		return ErrorTimeout
	case errors.As(err, &wf), errors.As(err, &rf):
		return ErrorFailed
	case errors.As(err, &req) && (req.Code() == gocql.ErrCodeInvalid || req.Code() == gocql.ErrCodeSyntax):
		return ErrorInvalid
	case errors.As(err, &req) && req.Code() == gocql.ErrCodeOverloaded:
		return ErrorOverloaded
	case errors.As(err, &frame) && (frame.GetCode() == gocql.ErrCodeInvalid || frame.GetCode() == gocql.ErrCodeSyntax):
		return ErrorInvalid
	case errors.As(err, &frame) && frame.GetCode() == gocql.ErrCodeOverloaded:
		return ErrorOverloaded
	case errors.Is(err, gocql.ErrNoConnections):
		return ErrorNoConnections
	}
	return ErrorOther
}
