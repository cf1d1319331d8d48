package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is a mistake on the command line (an unknown flag, a bad flag value, a stray
// argument): kvnode exits with status 2 for it, as for an unknown command, and 1 for any other
// failure.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError with the message format makes of args.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Parse parses args with fs for `kvnode <cmd>`. With -h it prints usage and fs's flags to stderr
// and returns flag.ErrHelp. Any other mistake, including a positional argument, is a *UsageError
// that names cmd; fs's own output is discarded so nothing is printed twice.
func Parse(fs *flag.FlagSet, args []string, cmd, usage string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return flag.ErrHelp
		}
		return Usagef("%s: %w (kvnode %s -h lists the flags)", cmd, err, cmd)
	}
	if fs.NArg() > 0 {
		return Usagef("%s: unexpected argument %q: every setting is a flag (kvnode %s -h lists them)", cmd, fs.Arg(0), cmd)
	}
	return nil
}
