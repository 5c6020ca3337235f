package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// stopWait is how long 'troupe stop' waits for the daemon to be gone.
const stopWait = 20 * time.Second

func stopCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("stop", "", "stop the daemon running on the home, and wait until it is gone", stderr)
	f := addClientFlags(fs, true)
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	var r control.StopResult
	plain := clientFlags{home: f.home} // prints nothing: the line comes once the daemon is gone
	if code := plain.request("stop", control.Request{Cmd: "stop"}, &r, stdout, stderr, func() {}); code != 0 {
		return code
	}
	// The daemon holds the home's lock until it has closed.
	h := cli.Home(*f.home)
	deadline := time.Now().Add(stopWait)
	for {
		unlock, err := h.Lock()
		if err == nil {
			unlock()
			if *f.json {
				b, _ := json.Marshal(struct {
					Peer    string `json:"peer"`
					Stopped bool   `json:"stopped"`
				}{r.Peer, true})
				fmt.Fprintln(stdout, string(b))
				return 0
			}
			fmt.Fprintf(stdout, "stopped %s\n", r.Peer)
			return 0
		}
		if !errors.Is(err, cli.ErrLocked) || time.Now().After(deadline) {
			return cli.Fail(stderr, "stop", fmt.Errorf("the daemon %s was asked to stop, but still holds %s: %w", r.Peer, h, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func configCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("config", "show | set KEY VALUE", "show: print the home's configuration as JSON, config.json over the defaults (a limit of 0 is libp2p's default; limits_in_force shows what each is on this machine). set: change one key of config.json (mesh, mdns, log_level, limits.conns, dead_letters.keep, ...; a list as JSON or comma-separated), checked before it is written; a running daemon takes it at its next start", stderr)
	hf := cli.HomeFlag(fs)
	asJSON := fs.Bool("json", false, "set: print the result as JSON (show prints JSON anyway)")
	pos, ok, code := cli.ParseArgs(fs, args, 1, 3)
	if !ok {
		return code
	}
	switch {
	case pos[0] == "show" && len(pos) == 1:
	case pos[0] == "set" && len(pos) == 3:
	case pos[0] == "set":
		return cli.Fail(stderr, "config", fmt.Errorf("%w: 'troupe config set KEY VALUE' takes two arguments", config.ErrUsage))
	default:
		return cli.Fail(stderr, "config", fmt.Errorf("%w: unknown subcommand %q; 'troupe config show' prints the configuration, 'troupe config set KEY VALUE' changes it", config.ErrUsage, strings.Join(pos, " ")))
	}
	h := cli.Home(*hf)
	if err := h.CheckPrivate(); err != nil {
		return cli.Fail(stderr, "config", err)
	}
	cfg, _, err := config.Load(h.ConfigFile())
	if err != nil {
		return cli.Fail(stderr, "config", err)
	}
	if pos[0] == "set" {
		next, err := config.Set(cfg, pos[1], pos[2])
		if err != nil {
			return cli.Fail(stderr, "config", err)
		}
		if _, err := h.Ensure(); err != nil {
			return cli.Fail(stderr, "config", err)
		}
		if err := config.Write(h.ConfigFile(), next); err != nil {
			return cli.Fail(stderr, "config", fmt.Errorf("writing %s: %w", h.ConfigFile(), err))
		}
		now, _ := json.Marshal(mustField(next, pos[1]))
		_, probeErr := dialDaemonProbe(h)
		if *asJSON {
			b, _ := json.Marshal(struct {
				Key     string          `json:"key"`
				Value   json.RawMessage `json:"value"`
				Config  string          `json:"config"`
				Running bool            `json:"daemon_running"` // it takes the value when it restarts
			}{pos[1], now, h.ConfigFile(), probeErr == nil})
			fmt.Fprintln(stdout, string(b))
			return 0
		}
		fmt.Fprintf(stdout, "%s = %s in %s\n", pos[1], now, h.ConfigFile())
		if probeErr == nil {
			fmt.Fprintln(stdout, "the running daemon takes it when it restarts ('troupe stop', then 'troupe daemon')")
		}
		return 0
	}
	b, err := config.Show(cfg)
	if err != nil {
		return cli.Fail(stderr, "config", err)
	}
	fmt.Fprintln(stdout, string(b))
	return 0
}

// mustField is the value at the JSON path key of cfg (a valid key).
func mustField(cfg config.Config, key string) any {
	b, _ := json.Marshal(cfg)
	var v any
	_ = json.Unmarshal(b, &v)
	for _, p := range strings.Split(key, ".") {
		v = v.(map[string]any)[p]
	}
	return v
}

// lonelyAfter is how long a daemon waits for a first peer before it
// prints a hint of why none came.
const lonelyAfter = 10 * time.Second

// lonelyHint is the one line a daemon prints when no peer came within
// lonelyAfter: the usual reasons, and what of them cfg sets.
func lonelyHint(cfg config.Config) string { return lonelyHintFor(cfg, nil, 0) }

// lonelyHintFor is lonelyHint with what 'troupe doctor' checks too: the
// interfaces that can carry multicast (nil: not looked at) and how many
// peers discovery found but could not dial.
func lonelyHintFor(cfg config.Config, ifaces []ifaceReport, dialFailures int) string {
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
