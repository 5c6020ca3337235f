package main

import (
	"strings"
	"testing"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestDeadLetterLine: a dead letter's line says its number, kind,
// target, sender and size, and one from plain code or of an unknown size
// says so.
func TestDeadLetterLine(t *testing.T) {
	e := control.DeadLetter{Seq: 7, Kind: "no such actor", To: "peerA/ghost", From: "peerB/sender", FromPeer: "peerB", Size: 3}
	line := deadLetterLine(e)
	for _, want := range []string{"#7", "no such actor", "to peerA/ghost", "from peerB/sender", "3 B"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if l := deadLetterLine(control.DeadLetter{Size: -1}); !strings.Contains(l, "from -") || !strings.Contains(l, "size unknown") {
		t.Errorf("line of a letter from plain code: %q", l)
	}
}

func TestLonelyHintNamesTheSettings(t *testing.T) {
	cfg := config.Default()
	cfg.Mesh, cfg.PSKFile, cfg.Allowlist = "team", "swarm.key", []string{"x"}
	got := lonelyHint(cfg)
	for _, want := range []string{"no peers after 10s", "UDP 5353", `mesh "team"`, "private-network key", "allowlisted", "-connect"} {
		if !strings.Contains(got, want) {
			t.Fatalf("hint %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "\n") {
		t.Fatal("the hint is more than one line")
	}
}

func TestCleanDropsBidiAndC1Controls(t *testing.T) {
	in := "ok\u202eevil\u2066x\u009b31m\u200fy"
	if got := cli.Clean(in); strings.ContainsAny(got, "\u202e\u2066\u009b\u200f") {
		t.Fatalf("cli.Clean(%q) = %q: a bidi or C1 control is left", in, got)
	}
}
