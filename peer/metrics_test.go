package peer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestWithPrometheus: a node registers Troupe's metrics and libp2p's with
// the registerer it is given; a second node on the same registerer is
// refused; Close takes Troupe's away.
func TestWithPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	a := newTestNode(t, WithPrometheus(reg))
	b := newTestNode(t)
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	values := gather(t, reg)
	if v, ok := values["troupe_peers"]; !ok || v != 1 {
		t.Fatalf("troupe_peers = %v (%v), want 1", v, ok)
	}
	if v := values["troupe_actors"]; v < 1 {
		t.Fatalf("troupe_actors = %v, want the node actor at least", v)
	}
	for _, name := range []string{"troupe_reader_bytes", "troupe_reader_streams", "troupe_reader_addresses", "troupe_reader_refused_total", "troupe_remote_watches"} {
		if v, ok := values[name]; !ok || v != 0 {
			t.Errorf("%s = %v (%v), want 0 on a quiet node", name, v, ok)
		}
	}
	libp2p := 0
	for name := range values {
		if strings.HasPrefix(name, "libp2p_") {
			libp2p++
		}
	}
	if libp2p == 0 {
		t.Fatalf("no libp2p metrics among %d", len(values))
	}
	if _, err := New(ctx, local(), quiet(), WithPrometheus(reg)); err == nil {
		t.Fatal("a second node on the same registerer was not refused")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := gather(t, reg)["troupe_actors"]; ok {
		t.Fatal("troupe_actors still served after Close")
	}
}

// gather returns the value of each metric reg serves (the sum over its
// series).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				out[mf.GetName()] += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[mf.GetName()] += m.GetCounter().GetValue()
			default:
				out[mf.GetName()] += 0
			}
		}
	}
	return out
}

// TestDeadLettersByReasonMetric: each dead letter counts under its
// reason's label.
func TestDeadLettersByReasonMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := newTestNode(t, WithPrometheus(reg))
	ghost, _ := Ref(a.ID(), "ghost")
	a.System().Send(ghost, "x")
	a.System().Send(ghost, "y")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "troupe_dead_letters_by_reason_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				got[l.GetName()+"="+l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	if got["reason=no_such_actor"] != 2 || len(got) != 1 {
		t.Fatalf("troupe_dead_letters_by_reason_total: %v", got)
	}
}
