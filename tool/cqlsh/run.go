package cqlsh

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/chzyer/readline"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// The node addresses the shell connects to without --addr: the native protocol's port, or with
// --protocol grpc the gRPC API's.
const (
	DefaultAddr     = "127.0.0.1:9042"
	DefaultGRPCAddr = "127.0.0.1:9043"
)

// DefaultWait is how long the shell waits without --wait for a node that is starting.
const DefaultWait = 30 * time.Second

// The protocols of --protocol.
const (
	protocolCQL  = "cql"
	protocolGRPC = "grpc"
)

// options are the parsed command-line flags.
type options struct {
	protocol    string
	addr        string
	consistency client.Consistency
	keyspace    string
	execute     string
	file        string
	timeout     time.Duration
	wait        time.Duration // --wait: how long to wait for a node that is starting
	tlsCA       string        // --tls-ca: connect over TLS, trusting this CA file
	// username and password log in to a node with --authenticator password; the password
	// comes from --password or, better (it is then not in the process list), from
	// PasswordEnv.
	username, password string
}

// PasswordEnv is the environment variable the password of --username is read from when
// --password is not given.
const PasswordEnv = cliflags.PasswordEnv

const usageText = `Usage: kvnode cql [flags]

An interactive CQL shell for kvnode, like cqlsh. With -e or -f, or when stdin is not a terminal,
it runs the statements in order and stops with exit status 1 at the first one that fails.

Flags:
  --addr host:port         node to connect to (default ` + DefaultAddr + `, or ` + DefaultGRPCAddr + ` with --protocol grpc)
  --protocol cql|grpc      the CQL native protocol (default) or kvnode's gRPC API
  --consistency level      ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM or EACH_QUORUM (default ONE)
  -k, --keyspace ks        keyspace to USE first
  -e, --execute 'STMT; ..' run the statements and exit
  -f, --file file.cql      run the statements in the file and exit
  --timeout duration       limit for each attempt to connect and for each statement (default 10s;
                           a schema change gets 10s more, for the nodes to agree on it)
  --wait duration          how long to wait for a node that is starting: one whose port refuses
                           connections or that has not answered yet (default 30s; 0: do not wait)
  --tls-ca file.pem        connect over TLS, trusting the CA certificates in the file
  -u, --username role      log in as this role (nodes started with --authenticator password)
  -p, --password pw        its password; better, set ` + PasswordEnv + ` (not in the process list)

Type HELP in the shell for its commands.
`

// parseArgs parses the flags. help is true when -h or --help was given (the usage is then
// printed to stdout).
func parseArgs(args []string, stdout io.Writer) (o options, help bool, err error) {
	fs := flag.NewFlagSet("kvnode cql", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var consistency string
	fs.StringVar(&o.addr, "addr", DefaultAddr, "")
	fs.StringVar(&o.protocol, "protocol", protocolCQL, "")
	fs.StringVar(&consistency, "consistency", "ONE", "")
	fs.StringVar(&o.keyspace, "keyspace", "", "")
	fs.StringVar(&o.keyspace, "k", "", "")
	fs.StringVar(&o.execute, "execute", "", "")
	fs.StringVar(&o.execute, "e", "", "")
	fs.StringVar(&o.file, "file", "", "")
	fs.StringVar(&o.file, "f", "", "")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "")
	fs.DurationVar(&o.wait, "wait", DefaultWait, "")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "")
	fs.StringVar(&o.username, "username", "", "")
	fs.StringVar(&o.username, "u", "", "")
	fs.StringVar(&o.password, "password", "", "")
	fs.StringVar(&o.password, "p", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			io.WriteString(stdout, usageText)
			return o, true, nil
		}
		return o, false, cliflags.Usagef("cql: %v (kvnode cql --help lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return o, false, cliflags.Usagef("cql: unexpected argument %q: quote the statements of -e (kvnode cql --help lists the flags)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["e"] || set["execute"]) && (set["f"] || set["file"]) {
		return o, false, cliflags.Usagef("cql: -e and -f cannot be used together")
	}
	if (set["e"] || set["execute"]) && strings.TrimSpace(o.execute) == "" {
		return o, false, cliflags.Usagef("cql: -e needs a statement")
	}
	if o.protocol != protocolCQL && o.protocol != protocolGRPC {
		return o, false, cliflags.Usagef("cql: --protocol %q: want cql or grpc", o.protocol)
	}
	if o.protocol == protocolGRPC && !set["addr"] {
		o.addr = DefaultGRPCAddr
	}
	if o.addr == "" {
		return o, false, cliflags.Usagef("cql: --addr is empty")
	}
	if o.consistency, err = client.ParseConsistency(consistency); err != nil {
		return o, false, cliflags.Usagef("cql: --consistency: %v", err)
	}
	if o.timeout <= 0 {
		return o, false, cliflags.Usagef("cql: --timeout must be positive, got %s", o.timeout)
	}
	if o.wait < 0 {
		return o, false, cliflags.Usagef("cql: --wait must not be negative, got %s", o.wait)
	}
	if o.username, o.password, err = cliflags.Credentials(o.username, o.password, set["password"] || set["p"], os.Getenv(PasswordEnv)); err != nil {
		return o, false, cliflags.Usagef("cql: %v", err)
	}
	return o, false, nil
}

// Run runs the shell: args are the arguments after "kvnode cql". It is interactive (readline
// line editing, history in $HOME/.kvnode_history) when stdin is an *os.File on a terminal and
// neither -e nor -f is given; otherwise it runs the statements from -e, -f or stdin in order
// and stops at the first failure.
//
// Results go to stdout; errors and warnings go to stderr. Run returns nil on success and after
// EXIT, QUIT or Ctrl-D. A non-nil error means exit status 1:
//   - ErrStatementFailed (test with errors.Is): a statement failed in a non-interactive run,
//     or the USE of --keyspace failed; the failure is already printed on stderr, so print
//     nothing more;
//   - any other error (bad flags, unreadable -f file, no connection, unwritable output, ctx
//     ended): nothing was printed about it; its text is final and is meant to be printed as is.
//
// In interactive mode Run handles SIGINT itself while a statement runs (it cancels that
// statement); a caller that turns SIGINT into the cancellation of ctx ends the shell instead.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, help, err := parseArgs(args, stdout)
	if err != nil || help {
		return err
	}
	var script string
	if o.file != "" {
		data, err := os.ReadFile(o.file)
		if err != nil {
			return fmt.Errorf("cql: %w", err)
		}
		script = string(data)
	}
	term, _ := stdin.(*os.File)
	termFd := fileFd(term)
	interactive := o.execute == "" && o.file == "" && termFd >= 0 && readline.IsTerminal(termFd)

	var tlsCfg *tls.Config
	if o.tlsCA != "" {
		if tlsCfg, err = tlsconfig.ClientConfig(o.tlsCA); err != nil {
			return fmt.Errorf("cql: %w", err)
		}
	}
	d := dialer{protocol: o.protocol, addr: o.addr, tlsCfg: tlsCfg, username: o.username, password: o.password,
		timeout: o.timeout, wait: o.wait, firstAttempt: firstAttempt, firstBackoff: firstBackoff, maxBackoff: maxBackoff}
	c, err := d.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer c.Close()

	s := &session{
		client:      c,
		cl:          o.consistency,
		timeout:     o.timeout,
		out:         &stickyWriter{w: stdout},
		errOut:      stderr,
		interactive: interactive,
	}
	if o.keyspace != "" {
		use := statement{Text: "USE " + quoteIdent(o.keyspace), Line: 1}
		if _, err := s.execute(ctx, use); err != nil {
			fmt.Fprintf(stderr, "--keyspace %s: %s\n", o.keyspace, describeError(err, o.addr, o.timeout))
			return ErrStatementFailed
		}
	}
	switch {
	case o.execute != "":
		return s.runText(ctx, o.execute)
	case o.file != "":
		s.source = o.file
		return s.runText(ctx, script)
	case interactive:
		fmt.Fprintf(stdout, "Connected to kvnode at %s.\nUse HELP for help.\n", o.addr)
		return runInteractive(ctx, s, term, termFd, stdout, stderr, historyFile())
	default:
		s.source = "<stdin>"
		return s.runReader(ctx, stdin)
	}
}

// fileFd returns f's file descriptor, or -1 when f is nil or has none. Unlike f.Fd it does not
// switch the file to blocking mode, so closing f still ends a pending Read.
func fileFd(f *os.File) int {
	if f == nil {
		return -1
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil {
		return -1
	}
	return fd
}

// dialer is how the shell reaches a node: the protocol, the address and the login.
type dialer struct {
	protocol, addr     string
	tlsCfg             *tls.Config
	username, password string
	// timeout bounds one attempt to connect; wait is how long to keep trying while the node is
	// starting (0: one attempt).
	timeout, wait time.Duration
	// firstAttempt is the time the first attempt may take when waiting; each later attempt may
	// take twice as long as the one before, up to timeout. firstBackoff is the pause after the
	// first failure, doubling up to maxBackoff. Tests set them shorter.
	firstAttempt, firstBackoff, maxBackoff time.Duration
}

// The pace of dialer's attempts while a node is starting.
const (
	firstAttempt = time.Second
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = time.Second
)

// connect dials the node, logging in when d.username is set. While the node is starting (its
// port refuses connections, or accepts them but the node does not answer yet), it tries
// again until d.wait has passed, telling stderr once "waiting for ADDR …". It fails with an
// error that names the address and says what happened. An attempt that fails in any other way
// ends it at once.
func (d dialer) connect(ctx context.Context, stderr io.Writer) (conn, error) {
	start := time.Now()
	deadline := start.Add(d.wait) // no attempt starts after it
	attempt, backoff, told, openFailures := min(d.firstAttempt, d.timeout), d.firstBackoff, false, 0
	if d.wait <= 0 {
		attempt = d.timeout
	}
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		c, err := d.dial(actx)
		cancel()
		if err == nil {
			return c, nil
		}
		var ae *client.AuthenticationError
		switch {
		case errors.As(err, &ae):
			return nil, fmt.Errorf("cql: cannot log in to kvnode at %s: %s", d.addr, ae.Message)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("cql: connecting to %s: %w", d.addr, ctx.Err())
		}
		cause, starting, portOpen := d.explain(ctx, err, attempt)
		if portOpen {
			// The gRPC connection failed but the port is open now: it may just have opened, so
			// try once more before taking it for a port that is not kvnode's.
			starting, openFailures = openFailures == 0, openFailures+1
		}
		if d.wait <= 0 || !starting || time.Until(deadline) <= 0 {
			if d.wait > 0 && starting {
				waited := time.Since(start).Round(100 * time.Millisecond)
				if noAnswer(err) {
					cause = fmt.Sprintf("timed out after %s: the port accepts connections, but the node has not answered (it may still be starting)", waited)
				} else {
					cause += fmt.Sprintf(" (still, after waiting %s for the node to start)", waited)
				}
			}
			return nil, fmt.Errorf("cql: cannot connect to kvnode at %s: %s", d.addr, cause)
		}
		if !told && !portOpen {
			fmt.Fprintf(stderr, "waiting for %s …\n", d.addr)
			told = true
		}
		pause := time.NewTimer(min(backoff, time.Until(deadline)))
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, fmt.Errorf("cql: connecting to %s: %w", d.addr, ctx.Err())
		case <-pause.C:
		}
		attempt, backoff = min(2*attempt, d.timeout), min(2*backoff, d.maxBackoff)
	}
}

// dial makes one attempt to connect within ctx.
func (d dialer) dial(ctx context.Context) (conn, error) {
	if d.protocol == protocolGRPC {
		var opts []client.Option
		if d.tlsCfg != nil {
			opts = append(opts, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(d.tlsCfg))))
		}
		if d.username != "" {
			opts = append(opts, client.WithCredentials(d.username, d.password))
		}
		return client.Dial(ctx, d.addr, opts...)
	}
	return dialNative(ctx, d.addr, d.tlsCfg, d.username, d.password)
}

// noAnswer reports whether err is the end of an attempt to connect that waited for an answer
// until its deadline.
func noAnswer(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// explain says why an attempt to connect failed with err, which took at most attempt, and
// whether the node may be starting: its port refuses connections (nothing listens yet), or
// accepts them but does not answer (a node listens on its port before it serves it, while
// it joins the ring). portOpen is set instead when a gRPC
// connection failed although a TCP connection to the port now succeeds.
func (d dialer) explain(ctx context.Context, err error, attempt time.Duration) (cause string, starting, portOpen bool) {
	var op *net.OpError
	var hs *handshakeError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		// The TCP connection failed: op.Err says why; op's own text repeats the address.
		return op.Err.Error(), errors.Is(err, syscall.ECONNREFUSED), false
	case noAnswer(err):
		return fmt.Sprintf("no answer within %s (the port accepts connections, but the node has not answered: it may still be starting)", attempt), true, false
	case errors.As(err, &hs):
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			// Not a node that is starting (it holds connections until it serves them): one
			// that is stopping, or a port that wants TLS or another protocol.
			return fmt.Sprintf("%v: the connection was closed during the handshake (for a node with TLS add --tls-ca; for the gRPC port add --protocol grpc)", hs.err), false, false
		}
		if hs.answered {
			return hs.err.Error(), false, false // a node that answered STARTUP with an error
		}
		return fmt.Sprintf("%v (the port accepts TCP connections but does not answer the CQL native protocol; for the gRPC port add --protocol grpc)", hs.err), false, false
	case d.protocol != protocolGRPC:
		return err.Error(), false, false
	}
	// gRPC reports only that the connection failed, so a plain TCP dial finds the reason
	// ("connection refused", "no such host").
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var nd net.Dialer
	c, terr := nd.DialContext(ctx, "tcp", d.addr)
	if terr != nil {
		if errors.As(terr, &op) && op.Err != nil {
			return op.Err.Error(), errors.Is(terr, syscall.ECONNREFUSED), false
		}
		return terr.Error(), false, false
	}
	c.Close()
	why := err
	if u := errors.Unwrap(err); u != nil {
		why = u // the client's own text repeats the address
	}
	return fmt.Sprintf("%v (the port accepts TCP connections; is it a kvnode client port?)", why), false, true
}

// runText runs a whole script (-e or -f).
func (s *session) runText(ctx context.Context, text string) error {
	done, err := s.feed(ctx, text)
	if done || err != nil {
		return err
	}
	_, err = s.finish(ctx)
	return err
}

// runReader runs statements from r line by line, so each runs as soon as its ';' arrives
// (useful when another program writes to the shell through a pipe).
func (s *session) runReader(ctx context.Context, r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, rerr := br.ReadString('\n')
		if line != "" {
			if done, err := s.feed(ctx, line); done || err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			_, err := s.finish(ctx)
			return err
		}
		if rerr != nil {
			return fmt.Errorf("cql: reading %s: %w", s.source, rerr)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cql: %w", err)
		}
	}
}

// quoteIdent returns name as CQL: as is when it is a plain lower-case identifier that is not a
// reserved word, otherwise double-quoted (so --keyspace MyKs names the keyspace "MyKs", as
// cqlsh -k does).
func quoteIdent(name string) string {
	plain := name != "" && name[0] >= 'a' && name[0] <= 'z' && !cql.Lookup(name).IsReserved()
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// historyFile is $HOME/.kvnode_history, or "" (no history file) when HOME is not set.
func historyFile() string {
	home := os.Getenv("HOME")
	if home == "" {
		return ""
	}
	return home + string(os.PathSeparator) + ".kvnode_history"
}
