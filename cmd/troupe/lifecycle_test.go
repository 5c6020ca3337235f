package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestLonelyHintUsesWhatDoctorChecks: with no multicast interface the
// hint says so instead of blaming the Wi-Fi, and it counts the peers
// found but not dialed.
func TestLonelyHintUsesWhatDoctorChecks(t *testing.T) {
	cfg := DefaultConfig()
	got := lonelyHintFor(cfg, []ifaceReport{}, 2)
	if strings.Contains(got, "Wi-Fi") || !strings.Contains(got, "no interface here can carry mDNS") || !strings.Contains(got, "2 peers were found but could not be dialed") {
		t.Fatalf("hint: %q", got)
	}
	if got := lonelyHintFor(cfg, []ifaceReport{{Name: "eth0", Addrs: []string{"10.0.0.2/24"}}}, 0); !strings.Contains(got, "UDP 5353") || strings.Contains(got, "dialed") {
		t.Fatalf("hint with an interface: %q", got)
	}
}

// TestVersionSaysGoAndPlatform: version prints the Go version and
// OS/arch, and --json the same as one object.
func TestVersionSaysGoAndPlatform(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "troupe ") || !strings.Contains(out, "go "+runtime.Version()+"\n") || !strings.Contains(out, "os/arch "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("version: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "version", "--json")
	var r versionResult
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Go != runtime.Version() || r.OS != runtime.GOOS || r.Version == "" {
		t.Fatalf("version --json: %d %q %v", code, out, err)
	}
}

// TestIDWithoutADaemon: id reads the home when no daemon runs: the same
// peer ID init printed, the mesh, no addresses; --json says offline.
func TestIDWithoutADaemon(t *testing.T) {
	home := t.TempDir()
	code, out, _ := runCLI(t, "init", "-home", home)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	peerLine, _, _ := strings.Cut(out[strings.Index(out, "peer "):], "\n")
	code, out, errOut := runCLI(t, "id", "-home", home)
	if code != 0 || !strings.Contains(out, peerLine+"\n") || !strings.Contains(out, "mesh default") || !strings.Contains(out, "daemon not running") {
		t.Fatalf("id: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "id", "-home", home, "--json")
	var r idResult
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !r.Offline || "peer "+r.ID != peerLine || len(r.Addrs) != 0 {
		t.Fatalf("id --json: %d %q %v", code, out, err)
	}
}
