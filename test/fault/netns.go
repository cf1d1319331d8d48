//go:build linux

package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of everything the harness creates outside its temporary directories:
// network namespaces (kvfault-PID-sw, kvfault-PID-n1, ...) and tmpfs mounts (source
// kvfault-PID-n1). PID is the test process's, so a later run can tell what a crashed run left
// behind (its PID is gone) from what a run going on beside it uses.
const Prefix = "kvfault-"

// commandTimeout bounds one ip, nft, tc or mount command.
const commandTimeout = 20 * time.Second

// run runs a command (ip, nft, tc, mount) with stdin and returns its combined output; the error
// names the command and carries its output.
func run(ctx context.Context, stdin string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// Netns is a named network namespace (ip netns add), created by the harness.
type Netns struct {
	Name string
}

// path is where ip netns keeps the namespace's handle.
func (ns Netns) path() string { return "/run/netns/" + ns.Name }

// Exec runs a command inside the namespace (ip netns exec) with stdin.
func (ns Netns) Exec(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	return run(ctx, stdin, "ip", append([]string{"netns", "exec", ns.Name}, args...)...)
}

// Wrapper is the command line that runs a program inside the namespace (proc.Node.Wrapper).
func (ns Netns) Wrapper() []string { return []string{"ip", "netns", "exec", ns.Name} }

// do runs fn on an OS thread that has entered the namespace, and returns that thread to the
// test process's namespace afterwards. Sockets fn creates belong to the namespace for their
// whole life, whichever thread uses them later: that is how the test process dials into and
// listens inside namespaces it does not run in. A thread that cannot be returned is left
// locked, so the runtime ends it with its goroutine.
func (ns Netns) do(fn func()) error {
	target, err := os.Open(ns.path())
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", ns.Name, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() { // owned by do: it waits for errc
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("this thread's network namespace: %w", err)
			return
		}
		defer home.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", ns.Name, err)
			return
		}
		fn()
		if err := setns(home); err != nil {
			errc <- fmt.Errorf("leave network namespace %s: %w", ns.Name, err) // the thread dies locked
			return
		}
		runtime.UnlockOSThread()
		errc <- nil
	}()
	return <-errc
}

func setns(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }

// DialContext connects to addr from inside the namespace: the dialer of the harness's clients
// (gocql's ClusterConfig.Dialer, proc.Node.Dial).
func (ns Netns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	var derr error
	if err := ns.do(func() {
		var d net.Dialer
		conn, derr = d.DialContext(ctx, network, addr)
	}); err != nil {
		return nil, err
	}
	return conn, derr
}

// Listen listens on addr inside the namespace.
func (ns Netns) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	var lerr error
	if err := ns.do(func() { l, lerr = net.Listen(network, addr) }); err != nil {
		return nil, err
	}
	return l, lerr
}

// addNetns creates the namespace with its loopback interface up.
func addNetns(ctx context.Context, name string) (Netns, error) {
	if _, err := run(ctx, "", "ip", "netns", "add", name); err != nil {
		return Netns{}, err
	}
	ns := Netns{Name: name}
	if _, err := run(ctx, "", "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		return ns, err
	}
	return ns, nil
}

// deleteNetns removes the namespace (and with it its interfaces, nft tables and qdiscs); a
// namespace already gone is not an error.
func deleteNetns(ctx context.Context, name string) error {
	if _, err := os.Stat("/run/netns/" + name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := run(ctx, "", "ip", "netns", "delete", name)
	return err
}

// runPrefix is the prefix of this process's names: kvfault-PID-.
func runPrefix() string { return Prefix + strconv.Itoa(os.Getpid()) + "-" }

// ownerAlive reports whether the process that made a harness name (kvfault-PID-...) still runs.
func ownerAlive(name string) bool {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return true // not ours: never touch it
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// CleanStale removes what a crashed earlier run of the harness left behind: tmpfs mounts and
// network namespaces named kvfault-PID-... whose PID no longer runs, after SIGKILLing any
// process still inside such a namespace (a kvnode started by that run). It returns what it
// removed, for the log.
func CleanStale(ctx context.Context) ([]string, error) {
	var removed []string
	var errs []error
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], Prefix) || ownerAlive(f[0]) {
			continue
		}
		if _, err := run(ctx, "", "umount", "-l", f[1]); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "mount "+f[1])
	}
	out, err := run(ctx, "", "ip", "netns", "list")
	if err != nil {
		return removed, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], Prefix) || ownerAlive(f[0]) {
			continue
		}
		pids, _ := run(ctx, "", "ip", "netns", "pids", f[0])
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
				removed = append(removed, "process "+p)
			}
		}
		if err := deleteNetns(ctx, f[0]); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "netns "+f[0])
	}
	return removed, errors.Join(errs...)
}
