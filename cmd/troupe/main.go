// Command troupe is the Troupe peer binary for laptops: 'troupe daemon'
// runs a peer (a libp2p host with built-in actors and a control socket),
// the other commands talk to it over that socket, and 'troupe chat' is the
// LAN chat demo.
//
// The command line uses the standard flag package rather than cobra: the
// commands are few and flat, and one small parsing helper (cli.ParseArgs:
// flags before, between or after the arguments; -h on every command; exit
// code 2 and one line for every usage error) covers them without another
// dependency.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/demo"
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
		return daemonCmd(args[1:], stdout, stderr)
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
		return demo.Cmd(args[1:], stdout, stderr)
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
