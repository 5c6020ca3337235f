package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// doctorJSON is the part of 'troupe doctor --json' the tests read.
type doctorJSON struct {
	Mesh   string `json:"mesh"`
	Daemon *struct {
		ID           string `json:"id"`
		DialFailures []struct {
			Peer string `json:"peer"`
			Err  string `json:"error"`
		} `json:"dial_failures"`
	} `json:"daemon"`
	Probe *struct {
		HeardSelf bool     `json:"heard_self"`
		Others    []string `json:"others"`
	} `json:"mdns_probe"`
	Hints []string `json:"hints"`
}

func parseDoctor(t *testing.T, out string) doctorJSON {
	t.Helper()
	var r doctorJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v: %q", err, out)
	}
	return r
}

func hasHint(r doctorJSON, part string) bool {
	return slices.ContainsFunc(r.Hints, func(h string) bool { return strings.Contains(h, part) })
}

// TestDoctorOnLoopback: without a daemon, doctor says so; with one (mDNS
// off, as on loopback), it reports the daemon and that mDNS is off, and
// sends no query.
func TestDoctorOnLoopback(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(loopbackConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, home, "doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor: exit %d: %s", code, errOut)
	}
	if r := parseDoctor(t, out); r.Daemon != nil || !hasHint(r, "no daemon runs") {
		t.Fatalf("doctor without a daemon: %+v", r)
	}
	d := startDaemonHome(t, home, "")
	code, out, errOut = cli(t, home, "doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor: exit %d: %s", code, errOut)
	}
	r := parseDoctor(t, out)
	if r.Daemon == nil || r.Daemon.ID != d.id.String() || r.Probe != nil || !hasHint(r, "mDNS is off") {
		t.Fatalf("doctor with a daemon, mDNS off: %+v", r)
	}
	code, out, _ = cli(t, home, "doctor")
	if code != 0 || !strings.Contains(out, "daemon "+d.id.String()) || !strings.Contains(out, "hint: mDNS is off") {
		t.Fatalf("doctor: exit %d: %q", code, out)
	}
}

// TestDoctorInNamespaces: on a LAN of two namespaces, doctor hears its
// daemon's own mDNS announcement and the other peer's, and lists that
// peer, whose allowlist refuses this one, as found but not dialable.
func TestDoctorInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	hosts := newNetns(t).lan(2)
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := libp2ppeer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	closed := t.TempDir() // b admits only a stranger
	if err := os.WriteFile(filepath.Join(closed, "config.json"), []byte(`{"allowlist": ["`+stranger.String()+`"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startDaemonIn(t, hosts[0], "-mesh", "doc")
	b := startDaemonHome(t, closed, hosts[1], "-mesh", "doc")
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", hosts[0], troupeBinary(t), "doctor", "--json", "-mdns-wait", "2s", "-home", a.home)
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("doctor: %v", err)
		}
		r := parseDoctor(t, string(out))
		failed := r.Daemon != nil && slices.ContainsFunc(r.Daemon.DialFailures, func(f struct {
			Peer string `json:"peer"`
			Err  string `json:"error"`
		}) bool {
			return f.Peer == b.id.String()
		})
		if r.Mesh == "doc" && r.Probe != nil && r.Probe.HeardSelf && slices.Contains(r.Probe.Others, b.id.String()) && failed && hasHint(r, "could not be dialed") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("doctor never heard itself and b, and listed b as undialable: %s", out)
		}
	}
}
