package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// stopResult is the daemon's answer to "stop".
type stopResult struct {
	Peer string `json:"peer"`
}

// requestStop answers a request to stop: the returned func, run once the
// answer is written (the daemon then closes the control socket), stops
// the daemon as SIGTERM does. A chat's own peer refuses (the chat ends it
// with /quit).
func (d *runningDaemon) requestStop() (any, func(), error) {
	if d.embeddedChat {
		return nil, nil, errors.New("this peer belongs to a 'troupe chat': end the chat with /quit")
	}
	return stopResult{Peer: d.node.ID().String()}, func() { d.stopOnce.Do(func() { close(d.stopped) }) }, nil
}

// stopWait is how long 'troupe stop' waits for the daemon to be gone.
const stopWait = 20 * time.Second

func stopCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("stop", "", "stop the daemon running on the home, and wait until it is gone", stderr)
	f := addClientFlags(fs, false)
	if _, ok, code := parseArgs(fs, args, 0, 0); !ok {
		return code
	}
	var r stopResult
	if code := f.request("stop", request{Cmd: "stop"}, &r, stdout, stderr, func() {}); code != 0 {
		return code
	}
	// The daemon holds the home's lock until it has closed.
	h := home(*f.home)
	deadline := time.Now().Add(stopWait)
	for {
		unlock, err := h.lock()
		if err == nil {
			unlock()
			fmt.Fprintf(stdout, "stopped %s\n", r.Peer)
			return 0
		}
		if !errors.Is(err, errLocked) || time.Now().After(deadline) {
			return fail(stderr, "stop", fmt.Errorf("the daemon %s was asked to stop, but still holds %s: %w", r.Peer, h, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func configCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config", "show", "print the home's configuration (config.json with every default filled in) as JSON", stderr)
	hf := homeFlag(fs)
	pos, ok, code := parseArgs(fs, args, 1, 1)
	if !ok {
		return code
	}
	if pos[0] != "show" {
		return fail(stderr, "config", fmt.Errorf("%w: unknown subcommand %q; 'troupe config show' prints the configuration", errUsage, pos[0]))
	}
	h := home(*hf)
	if err := h.checkPrivate(); err != nil {
		return fail(stderr, "config", err)
	}
	cfg, _, err := loadConfig(h.configFile())
	if err != nil {
		return fail(stderr, "config", err)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fail(stderr, "config", err)
	}
	fmt.Fprintln(stdout, string(b))
	return 0
}

// lonelyAfter is how long a daemon waits for a first peer before it
// prints a hint of why none came.
const lonelyAfter = 10 * time.Second

// lonelyHint is the one line a daemon prints when no peer came within
// lonelyAfter: the usual reasons, and what of them cfg sets.
func lonelyHint(cfg Config) string { return lonelyHintFor(cfg, nil, 0) }

// lonelyHintFor is lonelyHint with what 'troupe doctor' checks too: the
// interfaces that can carry multicast (nil: not looked at) and how many
// peers discovery found but could not dial.
func lonelyHintFor(cfg Config, ifaces []ifaceReport, dialFailures int) string {
	var why []string
	switch {
	case !cfg.MDNS:
		why = append(why, "mDNS is off")
	case ifaces != nil && len(ifaces) == 0:
		why = append(why, "no interface here can carry mDNS (none is up, multicast, not loopback, with an address)")
	default:
		why = append(why, "mDNS (UDP 5353) may be blocked: Wi-Fi client isolation, a firewall, or macOS's local-network permission")
	}
	if dialFailures > 0 {
		why = append(why, fmt.Sprintf("%d peers were found but could not be dialed ('troupe doctor' lists why)", dialFailures))
	}
	why = append(why, fmt.Sprintf("other peers must use mesh %q", cfg.Mesh))
	if cfg.PSKFile != "" {
		why = append(why, "the same private-network key")
	}
	if len(cfg.Allowlist) > 0 {
		why = append(why, "an allowlisted peer ID")
	}
	return fmt.Sprintf("no peers after %v: %s; or give -connect a peer's address ('troupe id' on it prints them); 'troupe doctor' checks", lonelyAfter, joinHint(why))
}

func joinHint(parts []string) string {
	out := parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}
