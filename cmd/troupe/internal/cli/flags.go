package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
)

// Flags is a command's flag set with its help text.
type Flags struct {
	*flag.FlagSet
	synopsis, summary string
	stderr            io.Writer
}

// NewFlags returns the flag set of a command; -h prints the command's
// synopsis, summary and flags (to stderr, where usage errors go too).
func NewFlags(name, synopsis, summary string, stderr io.Writer) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Flags{FlagSet: fs, synopsis: synopsis, summary: summary, stderr: stderr}
}

// Help prints the command's help.
func (fs *Flags) Help() {
	fmt.Fprintf(fs.stderr, "usage: troupe %s [flags] %s\n\n%s\n\nflags:\n", fs.Name(), fs.synopsis, fs.summary)
	fs.SetOutput(fs.stderr)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// HomeFlag adds -home to a command.
func HomeFlag(fs *Flags) *string {
	return fs.String("home", DefaultHome(), "home directory with the identity key, config.json and the control socket ($TROUPE_HOME)")
}

// ParseArgs parses flags that may come before, between or after the
// positional arguments, of which there must be between min and max. When
// ok is false the command must exit with code: 0 after -h (help printed),
// 2 after a bad flag or argument count (one line printed).
func ParseArgs(fs *Flags, args []string, min, max int) (pos []string, ok bool, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Help()
				return nil, false, 0
			}
			fmt.Fprintf(fs.stderr, "troupe %s: %v; run 'troupe %s -h'\n", fs.Name(), err, fs.Name())
			return nil, false, 2
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < min:
		fmt.Fprintf(fs.stderr, "troupe %s: missing arguments (%s); run 'troupe %s -h'\n", fs.Name(), fs.synopsis, fs.Name())
		return nil, false, 2
	case len(pos) > max:
		fmt.Fprintf(fs.stderr, "troupe %s: unexpected argument %q; run 'troupe %s -h'\n", fs.Name(), pos[max], fs.Name())
		return nil, false, 2
	}
	return pos, true, 0
}

// Fail prints err as one line and returns the exit code: 2 for usage and
// configuration errors, 1 otherwise.
func Fail(stderr io.Writer, cmd string, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	// config.ErrUsage sets the exit code; the line says what was wrong.
	msg = strings.TrimPrefix(msg, config.ErrUsage.Error()+": ")
	fmt.Fprintf(stderr, "troupe %s: %s\n", cmd, msg)
	if errors.Is(err, config.ErrUsage) || errors.Is(err, config.ErrInvalid) {
		return 2
	}
	return 1
}

// ListFlag collects a repeated string flag.
type ListFlag []string

// String joins the values with commas.
func (l *ListFlag) String() string { return strings.Join(*l, ",") }

// Set adds a value.
func (l *ListFlag) Set(s string) error { *l = append(*l, s); return nil }
