//go:build linux

package cqlsh

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair with the standard library alone: the master end the test
// types into and reads the screen from, and the terminal end the shell gets as stdin and stdout.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	// Control, not Fd: Fd would switch the master to blocking mode, and Close would then not
	// end the reader goroutine's pending Read.
	rc, err := m.SyscallConn()
	if err != nil {
		m.Close()
		t.Skipf("pseudo-terminal: %v", err)
	}
	var (
		unlock int32
		n      uint32
		errno  syscall.Errno
	)
	rc.Control(func(fd uintptr) {
		if _, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
			return
		}
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n)))
	})
	if errno != 0 {
		m.Close()
		t.Skipf("setting up the pseudo-terminal: %v", errno)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	return m, s
}

// screen collects what the shell writes to the terminal and lets the test wait for text.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	seen    int // how far waitFor has matched
	changed chan struct{}
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

// waitFor waits until text appears after what earlier calls matched.
func (s *screen) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		rest := s.buf.String()[s.seen:]
		if i := strings.Index(rest, text); i >= 0 {
			s.seen += i + len(text)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("the terminal never showed %q; after the last match it shows %q", text, rest)
		}
	}
}

// TestTerminalSession runs the real readline loop on a pseudo-terminal: typing a statement over
// two lines, Ctrl-C on a half-typed one, USE changing the prompt, the history file, and Ctrl-D.
func TestTerminalSession(t *testing.T) {
	f := startNode(t)
	answerKV(f, "SELECT k, v FROM ks.t\nWHERE k = 'a'")
	master, term := openPTY(t)
	home := t.TempDir()
	t.Setenv("HOME", home)

	scr := &screen{changed: make(chan struct{}, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, []string{"--protocol", "grpc", "--addr", f.addr}, term, term, &stderr) }()
	t.Cleanup(func() {
		term.Close()
		master.Close()
		<-copied
	})

	typeKeys := func(keys string) {
		t.Helper()
		if _, err := master.WriteString(keys); err != nil {
			t.Fatal(err)
		}
	}
	scr.waitFor(t, "Connected to kvnode at "+f.addr)
	scr.waitFor(t, "kvnode> ")
	typeKeys("SELECT k, v FROM ks.t\r")
	scr.waitFor(t, "   ...> ")
	typeKeys("WHERE k = 'a';\r")
	scr.waitFor(t, "(1 rows)")
	scr.waitFor(t, "kvnode> ")
	typeKeys("INSERT INTO t\r")
	scr.waitFor(t, "   ...> ")
	typeKeys("(k) VALUES\x03")
	scr.waitFor(t, "^C")
	scr.waitFor(t, "kvnode> ")
	typeKeys("use ks;\r")
	scr.waitFor(t, "kvnode:ks> ")
	typeKeys("\x04")

	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run after Ctrl-D returned %v; stderr: %s", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after Ctrl-D")
	}
	want := []string{"SELECT k, v FROM ks.t\nWHERE k = 'a'", "use ks"}
	if got := f.statements(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the node received %q, want %q (the interrupted INSERT must not be sent)", got, want)
	}
	history, err := os.ReadFile(filepath.Join(home, ".kvnode_history"))
	if err != nil {
		t.Fatalf("no history file: %v", err)
	}
	for _, line := range []string{"SELECT k, v FROM ks.t", "WHERE k = 'a';", "use ks;"} {
		if !strings.Contains(string(history), line+"\n") {
			t.Errorf("history file\n%s\ndoes not hold the line %q", history, line)
		}
	}
}
