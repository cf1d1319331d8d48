package cqlsh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/chzyer/readline"
)

// runInteractive reads lines from the terminal with readline and feeds them to the session.
// All the shell's logic is in the session; this loop only moves lines, prompts and Ctrl-C.
// fd is term's file descriptor; history is the history file, "" for none.
func runInteractive(ctx context.Context, s *session, term *os.File, fd int, stdout, stderr io.Writer, history string) error {
	var (
		mu  sync.Mutex
		raw *readline.State
	)
	// The width is read again on every call, so a resized window (SIGWINCH, which readline
	// watches) redraws at the new width. Output that is not a terminal counts as 80 wide.
	out, _ := stdout.(*os.File)
	widthFd := fileFd(out)
	if widthFd >= 0 && !readline.IsTerminal(widthFd) {
		widthFd = -1
	}
	width := func() int {
		if widthFd >= 0 {
			if w, _, err := readline.GetSize(widthFd); err == nil && w > 0 {
				return w
			}
		}
		return 80
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          s.prompt(),
		HistoryFile:     history,
		Stdin:           term,
		Stdout:          stdout,
		Stderr:          stderr,
		InterruptPrompt: "^C",
		EOFPrompt:       "",
		FuncIsTerminal:  func() bool { return true },
		FuncGetWidth:    width,
		FuncMakeRaw: func() error {
			mu.Lock()
			defer mu.Unlock()
			st, err := readline.MakeRaw(fd)
			if err == nil {
				raw = st
			}
			return err
		},
		FuncExitRaw: func() error {
			mu.Lock()
			defer mu.Unlock()
			if raw == nil {
				return nil
			}
			st := raw
			raw = nil
			return readline.Restore(fd, st)
		},
	})
	if err != nil {
		return fmt.Errorf("cql: terminal: %w", err)
	}
	defer rl.Close()

	// While a statement runs the terminal is not in raw mode, so Ctrl-C is a SIGINT: it
	// cancels that statement instead of killing the shell.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	for {
		rl.SetPrompt(s.prompt())
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			s.interrupt()
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("cql: reading the terminal: %w", err)
		}
		select {
		case <-sigs: // a stray SIGINT from before this line must not cancel it
		default:
		}
		done, err := feedInterruptible(ctx, s, line+"\n", sigs)
		if done || err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cql: %w", err)
		}
	}
}

// feedInterruptible feeds one line to the session, cancelling the statements it runs when a
// signal arrives on sigs.
func feedInterruptible(ctx context.Context, s *session, line string, sigs <-chan os.Signal) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	defer func() {
		cancel()
		<-stopped
	}()
	go func() {
		defer close(stopped)
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.feed(ctx, line)
}
