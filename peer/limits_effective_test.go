package peer

import (
	"errors"
	"testing"
)

// TestEffectiveLimits: what config show prints as limits in force is
// libp2p's scaled default where a limit is 0, the limit itself where it
// is set, and New's refusal where it cannot hold one maximum frame.
func TestEffectiveLimits(t *testing.T) {
	def, err := EffectiveLimits(Limits{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]int64{
		"memory": def.Memory, "fds": int64(def.FDs), "conns": int64(def.Conns),
		"conns inbound": int64(def.ConnsInbound), "streams": int64(def.Streams),
		"streams inbound": int64(def.StreamsInbound), "conns per peer": int64(def.ConnsPerPeer),
		"streams per peer": int64(def.StreamsPerPeer),
	} {
		if v == 0 {
			t.Errorf("default %s in force is 0: not filled in", name)
		}
	}
	if def.StreamWindow != DefaultStreamWindow {
		t.Errorf("stream window %d, want %d", def.StreamWindow, DefaultStreamWindow)
	}
	if need := int64(streamMemory(4 << 20)); def.Memory > 0 && def.Memory < need {
		t.Errorf("memory in force %d is below what one maximum frame needs (%d)", def.Memory, need)
	}

	set, err := EffectiveLimits(Limits{Conns: 77, ConnsPerPeer: 3, StreamWindow: 2 << 20}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if set.Conns != 77 || set.ConnsPerPeer != 3 || set.StreamWindow != 2<<20 {
		t.Errorf("set limits not kept: %+v", set)
	}
	if set.Streams != def.Streams {
		t.Errorf("an unset limit changed with the others: streams %d, default %d", set.Streams, def.Streams)
	}

	if _, err := EffectiveLimits(Limits{Memory: 1 << 20}, 4<<20); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("1 MiB of memory for 4 MiB frames: %v, want ErrInvalidOption", err)
	}
	if _, err := EffectiveLimits(Limits{Conns: -1}, 0); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("negative conns: %v, want ErrInvalidOption", err)
	}
}
