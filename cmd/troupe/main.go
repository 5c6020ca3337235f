// Command troupe is the Troupe peer binary for laptops: 'troupe daemon'
// runs a peer (a libp2p host with built-in actors and a control socket),
// the other commands talk to it over that socket, and 'troupe chat' is the
// LAN chat demo.
//
// The command line uses the standard flag package rather than cobra: the
// commands are few and flat, and one small parsing helper (flags before,
// between or after the arguments; -h on every command; exit code 2 and one
// line for every usage error) covers them without another dependency.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: troupe <command> [flags] [arguments]

commands:
  init      create the home directory: identity key and config.json
  daemon    run the peer (creates the home with defaults when missing)
  stop      stop the daemon and wait until it is gone
  config    print the configuration: troupe config show
  id        print this peer's ID and addresses
  peers     list the connected peers
  top       watch the peers, their message rates and link queues live
  actors    list the actors of this peer, or of PEER
  send      send a JSON message to an actor: troupe send [PEER/]NAME JSON
  ask       send a JSON message and print the reply: troupe ask [PEER/]NAME JSON
  deadletters  list the messages that reached no actor: troupe deadletters [--follow]
  ping      measure the round trip to a peer
  connect   connect to a peer at a multiaddr (direct, or a relay's circuit)
  log       the daemon's log level: troupe log level [debug|info|warn|error]
  doctor    say why this peer finds no others
  chat      the LAN chat: troupe chat --nick NAME [--room ROOM]
  demo      run the paper's counter and a ring of actors locally
  version   print the version, commit, Go version and OS/arch
  completion  print a shell completion script: troupe completion bash|zsh|fish
  help      print this help, or a command's: troupe help COMMAND

The home directory is $TROUPE_HOME, default ~/.troupe (or -home DIR).
Run 'troupe <command> -h' for the flags of a command.
`

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run executes the command line and returns the exit code: 0 on success, 1
// when the command failed, 2 for bad usage or configuration.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "init":
		return initCmd(args[1:], stdout, stderr)
	case "daemon":
		return daemon(args[1:], stdout, stderr)
	case "id":
		return idCmd(args[1:], stdout, stderr)
	case "peers":
		return peersCmd(args[1:], stdout, stderr)
	case "top":
		return topCmd(args[1:], stdin, stdout, stderr)
	case "actors":
		return actorsCmd(args[1:], stdout, stderr)
	case "send":
		return sendCmd(args[1:], stdout, stderr)
	case "ask":
		return askCmd(args[1:], stdout, stderr)
	case "deadletters":
		return deadlettersCmd(args[1:], stdout, stderr)
	case "ping":
		return pingCmd(args[1:], stdout, stderr)
	case "connect":
		return connectCmd(args[1:], stdout, stderr)
	case "chat":
		return chatCmd(args[1:], stdin, stdout, stderr)
	case "demo":
		return demo(args[1:], stdout, stderr)
	case "stop":
		return stopCmd(args[1:], stdout, stderr)
	case "config":
		return configCmd(args[1:], stdout, stderr)
	case "completion":
		return completionCmd(args[1:], stdout, stderr)
	case "log":
		return logCmd(args[1:], stdout, stderr)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "__complete": // for the completion scripts; not in the usage
		return completeCmd(args[1:], stdout)
	case "version", "--version":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		if args[0] == "help" && len(args) > 1 && args[1] != "help" {
			return helpCmd(args[1:], stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "troupe: unknown command %q; run 'troupe help' for the list\n", args[0])
		return 2
	}
}

// commands are the names run takes, in usage's order.
var commands = []string{"init", "daemon", "stop", "config", "id", "peers", "top", "actors", "send", "ask", "deadletters", "ping", "connect", "log", "doctor", "chat", "demo", "version", "completion", "help"}

// helpCmd is 'troupe help COMMAND': the command's help (its -h), on
// stdout, as it was asked for.
func helpCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintf(stderr, "troupe help: unexpected argument %q; run 'troupe help COMMAND'\n", args[1])
		return 2
	}
	if !slices.Contains(commands, args[0]) {
		fmt.Fprintf(stderr, "troupe help: unknown command %q; run 'troupe help' for the list\n", args[0])
		return 2
	}
	return run([]string{args[0], "-h"}, stdin, stdout, stdout)
}

// buildVersion is the version: set at build time, or the module's when it
// was built as a dependency or with 'go install ...@version', or "dev"
// with the commit it was built from when known.
func buildVersion() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return version
	}
	return fmt.Sprintf("%s (%.12s%s)", version, rev, modified)
}

// errUsage marks a bad command line (exit code 2).
var errUsage = config.ErrUsage

// cmdFlags is a command's flag set with its help text.
type cmdFlags struct {
	*flag.FlagSet
	synopsis, summary string
	stderr            io.Writer
}

// newFlagSet returns the flag set of a command; -h prints the command's
// synopsis, summary and flags.
func newFlagSet(name, synopsis, summary string, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cmdFlags{FlagSet: fs, synopsis: synopsis, summary: summary, stderr: stderr}
}

// help prints the command's help.
func (fs *cmdFlags) help() {
	fmt.Fprintf(fs.stderr, "usage: troupe %s [flags] %s\n\n%s\n\nflags:\n", fs.Name(), fs.synopsis, fs.summary)
	fs.SetOutput(fs.stderr)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// homeFlag adds -home to a command.
func homeFlag(fs *cmdFlags) *string {
	return fs.String("home", cli.DefaultHome(), "home directory with the identity key, config.json and the control socket ($TROUPE_HOME)")
}

// parseArgs parses flags that may come before, between or after the
// positional arguments, of which there must be between min and max. When
// ok is false the command must exit with code: 0 after -h (help printed),
// 2 after a bad flag or argument count (one line printed).
func parseArgs(fs *cmdFlags, args []string, min, max int) (pos []string, ok bool, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.help()
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

// fail prints err as one line and returns the exit code: 2 for usage and
// configuration errors, 1 otherwise.
func fail(stderr io.Writer, cmd string, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	// errUsage sets the exit code; the line says what was wrong.
	msg = strings.TrimPrefix(msg, errUsage.Error()+": ")
	fmt.Fprintf(stderr, "troupe %s: %s\n", cmd, msg)
	if errors.Is(err, errUsage) || errors.Is(err, config.ErrInvalid) {
		return 2
	}
	return 1
}
