package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/troupe-mesh/troupe/routing"
)

// TestCollectorExportsEverySample: each metric is exported once, of its
// kind, with the value of its field of the sample (every field set to a
// distinct value, so a metric read from the wrong field fails), and the
// dead letters by reason under their labels, two kinds of one label
// added up.
func TestCollectorExportsEverySample(t *testing.T) {
	sm := Sample{
		Router: routing.Stats{Sent: 1, Received: 2, LinkFull: 3, TooLarge: 4, TooLargeIn: 5, DecodeErrors: 6,
			StreamsReset: 7, SlowStreams: 8, LossesDeclared: 9, LossesHeard: 10, UnknownTypes: 11, Refused: 12,
			ReaderPanics: 13, Paused: 14, Shed: 15, QueuedUser: 16, QueuedCtl: 100, ReaderBytes: 17,
			ReaderStreams: 18, ReaderAddrs: 19, ReaderRefused: 20, RepliesRefused: 36,
			ReplyPaused: 37, ReplyPausesHeard: 38},
		DeadLetters: 21, MailboxOverflows: 22, Replacements: 23, Actors: 24, RemoteWatches: 25, Peers: 26,
		GroupIn: 27, Rejected: 28, GroupExpired: 29, HolePunches: 30, HolePunched: 31,
		RelayReservations: 32, RelayCircuits: 33, RelayMembers: 34, RelayCuts: 35,
		DeadLettersByKind: map[string]uint64{"no such actor": 3, "No Such Actor!": 4, "mailbox full": 5},
	}
	want := map[string]float64{
		"troupe_messages_out_total": 1, "troupe_messages_in_total": 2, "troupe_link_full_total": 3,
		"troupe_too_large_total": 4, "troupe_too_large_in_total": 5, "troupe_decode_errors_total": 6,
		"troupe_streams_reset_total": 7, "troupe_streams_slow_total": 8, "troupe_losses_declared_total": 9,
		"troupe_losses_heard_total": 10, "troupe_unknown_type_total": 11, "troupe_signals_refused_total": 12,
		"troupe_reader_panics_total": 13, "troupe_peer_pauses_total": 14, "troupe_peer_sheds_total": 15,
		"troupe_link_queue_depth": 116, "troupe_reader_bytes": 17, "troupe_reader_streams": 18,
		"troupe_reader_addresses": 19, "troupe_reader_refused_total": 20, "troupe_dead_letters_total": 21,
		"troupe_mailbox_full_total": 22, "troupe_watchdog_replacements_total": 23, "troupe_actors": 24,
		"troupe_remote_watches": 25, "troupe_peers": 26, "troupe_group_messages_in_total": 27,
		"troupe_group_rejected_total": 28, "troupe_group_members_expired_total": 29,
		"troupe_hole_punches_total": 30, "troupe_hole_punches_succeeded_total": 31,
		"troupe_relay_reservations": 32, "troupe_relay_circuits": 33,
		"troupe_relay_member_circuits_total": 34, "troupe_relay_cuts_total": 35,
		"troupe_replies_refused_total": 36, "troupe_peer_reply_pauses_total": 37,
		"troupe_peer_reply_pauses_heard_total": 38,
	}
	if len(want) != len(metricDefs) {
		t.Fatalf("the test knows %d metrics, metricDefs lists %d", len(want), len(metricDefs))
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(New(func() Sample { return sm })); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]bool{}
	for _, m := range metricDefs {
		counters[m.name] = m.counter
	}
	byReason := map[string]float64{}
	for _, mf := range mfs {
		name := mf.GetName()
		if name == "troupe_dead_letters_by_reason_total" {
			for _, m := range mf.GetMetric() {
				byReason[m.GetLabel()[0].GetValue()] += m.GetCounter().GetValue()
			}
			continue
		}
		w, ok := want[name]
		if !ok {
			t.Errorf("%s exported, not known", name)
			continue
		}
		delete(want, name)
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%s: %d series", name, len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		got, kind := m.GetGauge().GetValue(), "GAUGE"
		if counters[name] {
			got, kind = m.GetCounter().GetValue(), "COUNTER"
		}
		if mf.GetType().String() != kind || got != w {
			t.Errorf("%s: %v %v, want %v %v", name, mf.GetType(), got, kind, w)
		}
	}
	if len(want) != 0 {
		t.Errorf("not exported: %v", want)
	}
	if fmt.Sprint(byReason) != fmt.Sprint(map[string]float64{"no_such_actor": 7, "mailbox_full": 5}) {
		t.Errorf("dead letters by reason: %v", byReason)
	}
}

// TestReasonLabel: a dead-letter kind becomes lower case letters and
// digits, runs of anything else one '_', none at either end.
func TestReasonLabel(t *testing.T) {
	for in, want := range map[string]string{"no such actor": "no_such_actor", "message of an unknown type": "message_of_an_unknown_type", "  A--b!": "a_b", "": ""} {
		if l := reasonLabel(in); l != want {
			t.Errorf("reasonLabel(%q) = %q, want %q", in, l, want)
		}
	}
}
