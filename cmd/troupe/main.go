// Command troupe is the Troupe peer binary: it runs a peer (daemon) and a
// local demo of the actor runtime. The control-socket CLI, discovery and the
// LAN chat come with the next issues.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: troupe <command> [flags]

commands:
  daemon    run a peer: a libp2p host with the built-in actors echo and watcher
  demo      run the paper's counter and a ring of actors locally, and print what happened
  version   print the version
  help      print this help

Run 'troupe <command> -h' for the flags of a command.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run executes the command line and returns the exit code: 0 on success, 1
// when the command failed, 2 for bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "daemon":
		return daemon(args[1:], stdout, stderr)
	case "demo":
		return demo(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "troupe", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "troupe: unknown command %q; run 'troupe help' for the list\n", args[0])
		return 2
	}
}

// parseFlags parses a command's flags, which take no positional arguments.
// When it returns ok=false the command must exit with code: 0 after -h, 2
// after a bad flag or argument (the message is on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "troupe %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}
