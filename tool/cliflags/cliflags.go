package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs for `kvnode <cmd>`. With -h it prints usage and fs's flags to stderr
// and returns flag.ErrHelp. Any other mistake, including a positional argument, is an error that
// names cmd; fs's own output is discarded so nothing is printed twice.
func Parse(fs *flag.FlagSet, args []string, cmd, usage string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return flag.ErrHelp
		}
		return fmt.Errorf("%s: %w (kvnode %s -h lists the flags)", cmd, err, cmd)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q: every setting is a flag (kvnode %s -h lists them)", cmd, fs.Arg(0), cmd)
	}
	return nil
}
