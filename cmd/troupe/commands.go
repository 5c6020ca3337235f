package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/daemon"
	"github.com/troupe-mesh/troupe/peer"
)

// initCmd creates the home: identity key (0600) and config.json.
func initCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("init", "", "create the home directory with an identity key (mode 0600) and a default config.json; an existing home is left as it is", stderr)
	homeDir := cli.HomeFlag(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	h := cli.Home(*homeDir)
	_, statErr := os.Stat(h.ConfigFile())
	if _, err := h.Ensure(); err != nil {
		return cli.Fail(stderr, "init", err)
	}
	key, err := peer.LoadOrCreateKey(h.KeyFile())
	if err != nil {
		return cli.Fail(stderr, "init", err)
	}
	id, err := libp2ppeer.IDFromPrivateKey(key)
	if err != nil {
		return cli.Fail(stderr, "init", err)
	}
	if *asJSON {
		b, _ := json.Marshal(struct {
			Home    string `json:"home"`
			Peer    string `json:"peer"`
			Config  string `json:"config"`
			Created bool   `json:"created"`
		}{string(h), id.String(), h.ConfigFile(), statErr != nil})
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	if statErr == nil {
		fmt.Fprintf(stdout, "%s already initialized\n", h)
	} else {
		fmt.Fprintf(stdout, "initialized %s\n", h)
	}
	fmt.Fprintf(stdout, "peer %s\nconfig %s\n", id, h.ConfigFile())
	return 0
}

// clientFlags are the flags every daemon client command has.
type clientFlags struct {
	home *string
	json *bool
}

func addClientFlags(fs *cli.Flags, withJSON bool) clientFlags {
	f := clientFlags{home: cli.HomeFlag(fs)}
	if withJSON {
		f.json = fs.Bool("json", false, "print the result as JSON")
	}
	return f
}

// request sends req to the daemon and prints the result as JSON (--json)
// or with human, which gets the decoded result in out.
func (f clientFlags) request(cmd string, req control.Request, out any, stdout, stderr io.Writer, human func()) int {
	ctx, stop := signalContext()
	defer stop()
	wait := max(req.Timeout, req.Wait) // as the daemon's handle
	if wait <= 0 {
		wait = daemon.DefaultAskTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	var raw json.RawMessage
	if _, err := control.Call(ctx, cli.Home(*f.home), req, &raw, false); err != nil {
		return cli.Fail(stderr, cmd, err)
	}
	if f.json != nil && *f.json {
		fmt.Fprintln(stdout, cli.CompactJSON(raw))
		return 0
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return cli.Fail(stderr, cmd, fmt.Errorf("bad result from the daemon: %w", err))
		}
	}
	human()
	return 0
}

func idCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("id", "", "print the daemon's peer ID, addresses and mesh", stderr)
	f := addClientFlags(fs, true)
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	var r control.IDResult
	if _, err := dialDaemonProbe(cli.Home(*f.home)); errors.Is(err, control.ErrNoDaemon) {
		return idOffline(cli.Home(*f.home), strings.Contains(err.Error(), "stale"), *f.json, stdout, stderr)
	}
	return f.request("id", control.Request{Cmd: "id"}, &r, stdout, stderr, func() {
		fmt.Fprintf(stdout, "peer %s\nmesh %s\nversion %s\nreachability %s\n", r.ID, r.Mesh, r.Version, r.Reachability)
		for _, a := range r.Addrs {
			fmt.Fprintf(stdout, "listen %s\n", a)
		}
	})
}

// dialDaemonProbe tells whether a daemon serves h (control.ErrNoDaemon if not).
func dialDaemonProbe(h cli.Home) (bool, error) {
	conn, err := control.Dial(h)
	if err != nil {
		return false, err
	}
	conn.Close()
	return true, nil
}

// idOffline is 'troupe id' with no daemon: the identity and mesh the
// home gives, no addresses (nothing listens).
// A stale control socket (a daemon that was killed) is said.
func idOffline(h cli.Home, stale, asJSON bool, stdout, stderr io.Writer) int {
	if _, err := os.Stat(h.KeyFile()); err != nil {
		return cli.Fail(stderr, "id", fmt.Errorf("%w on %s, and it has no identity yet: 'troupe init' or 'troupe daemon' creates one", control.ErrNoDaemon, h))
	}
	if err := h.CheckPrivate(); err != nil {
		return cli.Fail(stderr, "id", err)
	}
	key, err := peer.LoadOrCreateKey(h.KeyFile()) // it exists: only loaded
	if err != nil {
		return cli.Fail(stderr, "id", err)
	}
	id, err := libp2ppeer.IDFromPrivateKey(key)
	if err != nil {
		return cli.Fail(stderr, "id", err)
	}
	cfg, _, err := config.Load(h.ConfigFile())
	if err != nil {
		return cli.Fail(stderr, "id", err)
	}
	r := control.IDResult{ID: id.String(), Reachability: "unknown", Addrs: []string{}, Mesh: cfg.Mesh, Version: buildVersion(), Home: string(h), Offline: true}
	if asJSON {
		b, _ := cli.MarshalJSON(r)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	why := "daemon not running"
	if stale {
		why = "daemon not running (its control socket is stale: it was killed)"
	}
	fmt.Fprintf(stdout, "peer %s\nmesh %s\nversion %s\n%s: no addresses ('troupe daemon' starts it)\n", r.ID, r.Mesh, r.Version, why)
	return 0
}

func peersCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("peers", "", "list the peers the daemon is connected to, with their addresses, latency and advertised actors", stderr)
	f := addClientFlags(fs, true)
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	var r []control.PeerInfo
	return f.request("peers", control.Request{Cmd: "peers"}, &r, stdout, stderr, func() {
		if len(r) == 0 {
			fmt.Fprintln(stdout, "no peers connected")
		}
		for _, p := range r {
			line := p.ID
			if len(p.Addrs) > 0 {
				line += " " + p.Addrs[0]
			}
			if p.LatencyMS > 0 {
				line += fmt.Sprintf(" %.3fms", p.LatencyMS)
			}
			if p.Relayed {
				line += " relayed"
			}
			if len(p.Actors) > 0 {
				line += " actors=" + cli.Clean(strings.Join(p.Actors, ","))
			}
			fmt.Fprintln(stdout, line)
		}
	})
}

func actorsCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("actors", "[PEER]", "list the named actors of this peer, or of PEER (asked through its info actor)", stderr)
	f := addClientFlags(fs, true)
	timeout := fs.Duration("timeout", daemon.DefaultAskTimeout, "how long to wait for PEER")
	pos, ok, code := cli.ParseArgs(fs, args, 0, 1)
	if !ok {
		return code
	}
	req := control.Request{Cmd: "actors", Timeout: *timeout}
	if len(pos) == 1 {
		if _, err := libp2ppeer.Decode(pos[0]); err != nil {
			return cli.Fail(stderr, "actors", fmt.Errorf("%w: %q is not a peer ID", config.ErrUsage, pos[0]))
		}
		req.Peer = pos[0]
	}
	if *timeout <= 0 {
		return cli.Fail(stderr, "actors", fmt.Errorf("%w: -timeout must be positive", config.ErrUsage))
	}
	var r control.ActorsResult
	return f.request("actors", req, &r, stdout, stderr, func() {
		for _, a := range r.Actors {
			fmt.Fprintf(stdout, "%s/%s\n", r.Peer, cli.Clean(a))
		}
	})
}

// messageRequest checks the address and JSON of send and ask.
func messageRequest(cmd string, pos []string, typ string, timeout time.Duration) (control.Request, error) {
	if _, _, err := daemon.ParseTarget(pos[0]); err != nil {
		return control.Request{}, err
	}
	if _, err := daemon.JSONToCBOR(pos[1]); err != nil {
		return control.Request{}, fmt.Errorf("%w: %w", config.ErrUsage, err)
	}
	if timeout <= 0 {
		return control.Request{}, fmt.Errorf("%w: -timeout must be positive", config.ErrUsage)
	}
	if typ != "" && !validTypeName(typ) {
		return control.Request{}, fmt.Errorf("%w: -type %q is not a type name (letters, digits, '.', '_', '-', '/')", config.ErrUsage, typ)
	}
	return control.Request{Cmd: cmd, Addr: pos[0], Body: json.RawMessage(pos[1]), Type: typ, Timeout: timeout}, nil
}

func validTypeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
			return false
		}
	}
	return true
}

func sendCmd(args []string, stdout, stderr io.Writer) int {
	return messageCmd("send", "send a JSON message to an actor; to another peer's it waits up to -wait for a bounce (no such actor, unknown type, full mailbox: an error) or a reply, and otherwise says delivery is unconfirmed; without -type it arrives as a codec.Raw of type "+daemon.JSONType,
		"how long a plain send (-wait 0, or to this peer) waits for room in the link; the request lasts at least -wait", args, stdout, stderr)
}

func askCmd(args []string, stdout, stderr io.Writer) int {
	return messageCmd("ask", "send a JSON message to an actor and print its reply as JSON", "how long to wait for the reply", args, stdout, stderr)
}

// messageCmd runs send or ask.
func messageCmd(cmd, summary, timeoutUsage string, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags(cmd, "[PEER/]NAME JSON", summary, stderr)
	f := addClientFlags(fs, true)
	typ := fs.String("type", "", "registered type name of the message (e.g. string, int, or an application type)")
	timeout := fs.Duration("timeout", daemon.DefaultAskTimeout, timeoutUsage)
	var wait *time.Duration
	if cmd == "send" {
		wait = fs.Duration("wait", daemon.DefaultSendWait, "how long to wait for another peer to bounce the message (or its actor to reply); 0: do not wait")
	}
	pos, ok, code := cli.ParseArgs(fs, args, 2, 2)
	if !ok {
		return code
	}
	req, err := messageRequest(cmd, pos, *typ, *timeout)
	if err != nil {
		return cli.Fail(stderr, cmd, err)
	}
	if cmd == "send" {
		if *wait < 0 || *wait > daemon.MaxRequestTime {
			return cli.Fail(stderr, cmd, fmt.Errorf("%w: -wait must be from 0 to %v", config.ErrUsage, daemon.MaxRequestTime))
		}
		req.Wait = *wait
		var r control.SendResult
		return f.request(cmd, req, &r, stdout, stderr, func() { fmt.Fprintln(stdout, sendLine(r)) })
	}
	var r control.AskResult
	return f.request(cmd, req, &r, stdout, stderr, func() { fmt.Fprintln(stdout, cli.CompactJSON(r.Reply)) })
}

func pingCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("ping", "PEER", "measure round trips to a peer: libp2p pings, then one ask to its echo actor", stderr)
	f := addClientFlags(fs, true)
	count := fs.Int("n", 3, "number of libp2p pings")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	pos, ok, code := cli.ParseArgs(fs, args, 1, 1)
	if !ok {
		return code
	}
	if _, err := libp2ppeer.Decode(pos[0]); err != nil {
		return cli.Fail(stderr, "ping", fmt.Errorf("%w: %q is not a peer ID", config.ErrUsage, pos[0]))
	}
	if *count < 1 || *count > 1000 || *timeout <= 0 {
		return cli.Fail(stderr, "ping", fmt.Errorf("%w: -n must be 1..1000 and -timeout positive", config.ErrUsage))
	}
	var r control.PingResult
	return f.request("ping", control.Request{Cmd: "ping", Peer: pos[0], Count: *count, Timeout: *timeout}, &r, stdout, stderr, func() {
		for i, rtt := range r.RTTsMS {
			fmt.Fprintf(stdout, "pong %d from %s: %.3f ms\n", i+1, r.Peer, rtt)
		}
		fmt.Fprintf(stdout, "echo actor round trip: %.3f ms\n", r.EchoMS)
	})
}

func connectCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("connect", "MULTIADDR", "connect the daemon to a peer at a multiaddr ending in /p2p/<peer ID> (a relay's circuit address works: /p2p/<relay>/p2p-circuit/p2p/<peer>)", stderr)
	f := addClientFlags(fs, true)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	pos, ok, code := cli.ParseArgs(fs, args, 1, 1)
	if !ok {
		return code
	}
	if _, err := config.ParsePeerAddr(pos[0]); err != nil {
		return cli.Fail(stderr, "connect", fmt.Errorf("%w: %w", config.ErrUsage, err))
	}
	if *timeout <= 0 {
		return cli.Fail(stderr, "connect", fmt.Errorf("%w: -timeout must be positive", config.ErrUsage))
	}
	var r control.ConnectResult
	return f.request("connect", control.Request{Cmd: "connect", Addr: pos[0], Timeout: *timeout}, &r, stdout, stderr, func() {
		how := "direct"
		if r.Relayed {
			how = "relayed"
		}
		if r.Already {
			fmt.Fprintf(stdout, "already connected to %s via another address, %s (%s); the address given was not dialed\n", r.Peer, r.Via, how)
			return
		}
		fmt.Fprintf(stdout, "connected %s (%s)\n", r.Peer, how)
	})
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// sendLine is a send's result for people.
func sendLine(r control.SendResult) string {
	switch r.Status {
	case "delivered":
		return "delivered to " + r.To + " (its actor replied)"
	case "sent":
		return "sent to " + r.To + " (a live actor of this peer)"
	}
	if r.WaitMS > 0 {
		return fmt.Sprintf("sent to %s; delivery unconfirmed (no bounce within %v)", r.To, time.Duration(r.WaitMS)*time.Millisecond)
	}
	return "sent to " + r.To + "; delivery unconfirmed"
}
