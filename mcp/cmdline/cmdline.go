// Package cmdline is how the letagents command reads its arguments: flags
// anywhere among them, and usage on stderr, as stdout may be an agent's
// protocol. main and the hook event, which is answered before main runs
// (mcp/letagents/internal/hookcmd), share it.
package cmdline

import (
	"flag"
	"fmt"
	"io"
)

// NewFlags is a command's flag set: errors and usage (synopsis, then the
// flags) go to stderr.
func NewFlags(synopsis string, stderr io.Writer) *flag.FlagSet {
	flags := flag.NewFlagSet("letagents", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n", synopsis)
		flags.PrintDefaults()
	}
	return flags
}

// ParseFlags parses args with flags anywhere among them, not only before
// the first other argument as flag.FlagSet.Parse does, and returns the
// others in order; a bare "--" makes the rest plain arguments. --help
// and -h print the usage and give flag.ErrHelp, which the command reads
// as a success.
func ParseFlags(flags *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := flags.Parse(args); err != nil {
			return nil, err
		}
		left := flags.Args()
		if len(left) == 0 {
			return rest, nil
		}
		if consumed := args[:len(args)-len(left)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(rest, left...), nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
}
