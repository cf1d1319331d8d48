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
	tlsCA       string // --tls-ca: connect over TLS, trusting this CA file
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
  --consistency level      ONE, QUORUM, ALL, LOCAL_ONE or LOCAL_QUORUM (default ONE)
  -k, --keyspace ks        keyspace to USE first
  -e, --execute 'STMT; ..' run the statements and exit
  -f, --file file.cql      run the statements in the file and exit
  --timeout duration       limit for connecting and for each statement (default 10s)
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
		return o, false, fmt.Errorf("cql: %v (see kvnode cql -h)", err)
	}
	if fs.NArg() > 0 {
		return o, false, fmt.Errorf("cql: unexpected argument %q (see kvnode cql -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["e"] || set["execute"]) && (set["f"] || set["file"]) {
		return o, false, errors.New("cql: -e and -f cannot be used together")
	}
	if (set["e"] || set["execute"]) && strings.TrimSpace(o.execute) == "" {
		return o, false, errors.New("cql: -e needs a statement")
	}
	if o.protocol != protocolCQL && o.protocol != protocolGRPC {
		return o, false, fmt.Errorf("cql: --protocol %q: want cql or grpc", o.protocol)
	}
	if o.protocol == protocolGRPC && !set["addr"] {
		o.addr = DefaultGRPCAddr
	}
	if o.addr == "" {
		return o, false, errors.New("cql: --addr is empty")
	}
	if o.consistency, err = client.ParseConsistency(consistency); err != nil {
		return o, false, fmt.Errorf("cql: --consistency: %v", err)
	}
	if o.timeout <= 0 {
		return o, false, fmt.Errorf("cql: --timeout must be positive, got %s", o.timeout)
	}
	if o.username, o.password, err = cliflags.Credentials(o.username, o.password, set["password"] || set["p"], os.Getenv(PasswordEnv)); err != nil {
		return o, false, fmt.Errorf("cql: %v", err)
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
	c, err := connect(ctx, o.protocol, o.addr, o.timeout, tlsCfg, o.username, o.password)
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

// connect dials the node over protocol, over TLS when tlsCfg is set, logging in as username when
// it is set, failing with an error that names the address.
func connect(ctx context.Context, protocol, addr string, timeout time.Duration, tlsCfg *tls.Config, username, password string) (conn, error) {
	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		c   conn
		err error
	)
	if protocol == protocolGRPC {
		var opts []client.Option
		if tlsCfg != nil {
			opts = append(opts, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg))))
		}
		if username != "" {
			opts = append(opts, client.WithCredentials(username, password))
		}
		c, err = client.Dial(dialCtx, addr, opts...)
	} else {
		c, err = dialNative(dialCtx, addr, tlsCfg, username, password)
	}
	if err == nil {
		return c, nil
	}
	var ae *client.AuthenticationError
	switch {
	case errors.As(err, &ae):
		return nil, fmt.Errorf("cql: cannot log in to kvnode at %s: %s", addr, ae.Message)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("cql: connecting to %s: %w", addr, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("cql: cannot connect to kvnode at %s: no answer within %s", addr, timeout)
	}
	return nil, fmt.Errorf("cql: cannot connect to kvnode at %s: %v", addr, dialCause(ctx, protocol, addr, timeout, err))
}

// dialCause explains a failed client.Dial. gRPC reports only that the connection failed, so a
// plain TCP dial finds the reason ("connection refused", "no such host"); when TCP connects,
// something that is not a kvnode node may be listening there.
func dialCause(ctx context.Context, protocol, addr string, timeout time.Duration, dialErr error) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err.Error() // the OpError's own text repeats the address
		}
		return err.Error()
	}
	conn.Close()
	cause := dialErr
	if u := errors.Unwrap(dialErr); u != nil {
		cause = u // the client's own text repeats the address
	}
	if protocol == protocolCQL {
		return fmt.Sprintf("%v (the port accepts TCP connections but does not answer the CQL native protocol; for the gRPC port add --protocol grpc)", cause)
	}
	return fmt.Sprintf("%v (the port accepts TCP connections; is it a kvnode client port?)", cause)
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
