package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/troupe-mesh/troupe/routing"
)

// Sample is what a node counts, read when its metrics are scraped.
type Sample struct {
	Router            routing.Stats
	DeadLetters       uint64            // the system's
	DeadLettersByKind map[string]uint64 // the system's, by actor.DeadLetterKind
	MailboxOverflows  uint64
	Replacements      uint64 // event loops handed to a fresh carrier
	Actors            int
	RemoteWatches     int
	Peers             int    // connected
	GroupIn           uint64 // group messages received
	Rejected          uint64 // group messages and advertisements rejected
	GroupExpired      uint64 // group members expired
	HolePunches       uint64 // tried
	HolePunched       uint64 // succeeded
	RelayReservations int64
	RelayCircuits     int64
	RelayMembers      uint64 // member circuits opened, in total
	RelayCuts         uint64 // stranger circuit ends cut, in total
}

// Collector exports a node's counters as Prometheus metrics, read when
// scraped (the counters are atomics already; nothing is double-counted).
type Collector struct {
	sample func() Sample
	descs  map[string]*prometheus.Desc
}

// metricDefs lists the exported metrics: name, help, and whether it is a
// counter (else a gauge).
var metricDefs = []struct {
	name, help string
	counter    bool
}{
	{"troupe_messages_out_total", "Frames sent to other peers.", true},
	{"troupe_messages_in_total", "Frames received from other peers.", true},
	{"troupe_dead_letters_total", "Messages that reached no actor.", true},
	{"troupe_link_full_total", "Messages dropped because a peer's link queue was full.", true},
	{"troupe_replies_refused_total", "Replies not sent (a full link queue, too large, unreachable) whose asker was told at once.", true},
	{"troupe_too_large_total", "Messages refused at the sender for their size.", true},
	{"troupe_too_large_in_total", "Messages from other peers refused for their size (the sender's maximum frame is larger).", true},
	{"troupe_decode_errors_total", "Frames from other peers that could not be decoded.", true},
	{"troupe_streams_reset_total", "Inbound streams reset for bad input.", true},
	{"troupe_streams_slow_total", "Of those, streams whose frame or large message came slower than its deadline (trickled).", true},
	{"troupe_losses_declared_total", "Streams given up here while their connection lived, with messages perhaps lost: each took the peer down on both sides.", true},
	{"troupe_losses_heard_total", "Losses other peers declared and this one acted on (their actors went down here).", true},
	{"troupe_unknown_type_total", "Messages from other peers of a type unknown here, to actors that do not take them: dead letters.", true},
	{"troupe_mailbox_full_total", "Messages refused by a full mailbox (an actor's mailbox limit, or its backlog of other peers' bytes): dead letters.", true},
	{"troupe_signals_refused_total", "Exit signals and links from other peers that the trust policy refused (kills, exits or links to protected actors).", true},
	{"troupe_reader_panics_total", "Inbound streams whose reader panicked (a bug); each was reset.", true},
	{"troupe_peer_pauses_total", "Times a peer's stream paused, the peer at its budget of bytes its messages hold here.", true},
	{"troupe_peer_sheds_total", "Times a peer stayed paused at its budget and the messages its actors saved were dropped.", true},
	{"troupe_peer_reply_pauses_total", "Times a peer that asked and did not read the replies had its user stream left unread.", true},
	{"troupe_peer_reply_pauses_heard_total", "Notices of other peers that they left this node's user stream unread, believed.", true},
	{"troupe_watchdog_replacements_total", "Event loops handed to a fresh carrier because an actor blocked.", true},
	{"troupe_group_messages_in_total", "Group messages received.", true},
	{"troupe_group_rejected_total", "Group messages and advertisements rejected as malformed or forged.", true},
	{"troupe_group_members_expired_total", "Group members of peers out of reach that left for lack of news.", true},
	{"troupe_hole_punches_total", "Hole punches tried to turn a relayed connection into a direct one (each DCUtR attempt).", true},
	{"troupe_hole_punches_succeeded_total", "Hole punches that made a direct connection.", true},
	{"troupe_relay_member_circuits_total", "Circuits this relay opened between two members of its mesh (no time or data limit).", true},
	{"troupe_relay_cuts_total", "Ends of stranger circuits this relay cut at their limit (time or data).", true},
	{"troupe_link_queue_depth", "Messages waiting in link queues to other peers.", false},
	{"troupe_peers", "Connected peers.", false},
	{"troupe_actors", "Live local actors.", false},
	{"troupe_reader_bytes", "Bytes inbound stream readers hold for unfinished frames and large messages, node-wide.", false},
	{"troupe_reader_streams", "Inbound streams whose readers hold memory for an unfinished frame or large message.", false},
	{"troupe_reader_addresses", "Source addresses whose peers' readers hold memory for unfinished frames or large messages.", false},
	{"troupe_reader_refused_total", "Reader memory reservations refused by the node-wide, per-address or stream-count bound; each reset its stream.", true},
	{"troupe_relay_reservations", "Reservations this relay holds (at most 128, 8 per IP).", false},
	{"troupe_relay_circuits", "Circuits open through this relay (at most 16 per peer).", false},
	{"troupe_remote_watches", "Monitors and links between local actors and other peers' (capped per peer and node-wide).", false},
}

// labeledMetricDefs lists the exported counters with one label: name,
// help, label.
var labeledMetricDefs = []struct{ name, help, label string }{
	{"troupe_dead_letters_by_reason_total", "Messages that reached no actor, per reason (actor.DeadLetterKind, as a label: no_such_actor, mailbox_full, ...; at most 25 values).", "reason"},
}

// New returns a collector of what sample reads at each scrape. sample
// must be safe for concurrent use.
func New(sample func() Sample) *Collector {
	c := &Collector{sample: sample, descs: map[string]*prometheus.Desc{}}
	for _, m := range metricDefs {
		c.descs[m.name] = prometheus.NewDesc(m.name, m.help, nil, nil)
	}
	for _, m := range labeledMetricDefs {
		c.descs[m.name] = prometheus.NewDesc(m.name, m.help, []string{m.label}, nil)
	}
	return c
}

// reasonLabel turns a dead-letter kind into a label value: lower case
// letters and digits, runs of anything else as one '_'.
func reasonLabel(kind string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(kind) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	sm := c.sample()
	rs := sm.Router
	values := map[string]float64{
		"troupe_messages_out_total":            float64(rs.Sent),
		"troupe_messages_in_total":             float64(rs.Received),
		"troupe_dead_letters_total":            float64(sm.DeadLetters),
		"troupe_link_full_total":               float64(rs.LinkFull),
		"troupe_replies_refused_total":         float64(rs.RepliesRefused),
		"troupe_too_large_total":               float64(rs.TooLarge),
		"troupe_too_large_in_total":            float64(rs.TooLargeIn),
		"troupe_decode_errors_total":           float64(rs.DecodeErrors),
		"troupe_streams_reset_total":           float64(rs.StreamsReset),
		"troupe_streams_slow_total":            float64(rs.SlowStreams),
		"troupe_losses_declared_total":         float64(rs.LossesDeclared),
		"troupe_losses_heard_total":            float64(rs.LossesHeard),
		"troupe_unknown_type_total":            float64(rs.UnknownTypes),
		"troupe_mailbox_full_total":            float64(sm.MailboxOverflows),
		"troupe_signals_refused_total":         float64(rs.Refused),
		"troupe_reader_panics_total":           float64(rs.ReaderPanics),
		"troupe_peer_pauses_total":             float64(rs.Paused),
		"troupe_peer_sheds_total":              float64(rs.Shed),
		"troupe_peer_reply_pauses_total":       float64(rs.ReplyPaused),
		"troupe_peer_reply_pauses_heard_total": float64(rs.ReplyPausesHeard),
		"troupe_watchdog_replacements_total":   float64(sm.Replacements),
		"troupe_group_messages_in_total":       float64(sm.GroupIn),
		"troupe_group_rejected_total":          float64(sm.Rejected),
		"troupe_group_members_expired_total":   float64(sm.GroupExpired),
		"troupe_hole_punches_total":            float64(sm.HolePunches),
		"troupe_hole_punches_succeeded_total":  float64(sm.HolePunched),
		"troupe_relay_member_circuits_total":   float64(sm.RelayMembers),
		"troupe_relay_cuts_total":              float64(sm.RelayCuts),
		"troupe_relay_reservations":            float64(sm.RelayReservations),
		"troupe_relay_circuits":                float64(sm.RelayCircuits),
		"troupe_link_queue_depth":              float64(rs.QueuedUser + rs.QueuedCtl),
		"troupe_peers":                         float64(sm.Peers),
		"troupe_actors":                        float64(sm.Actors),
		"troupe_remote_watches":                float64(sm.RemoteWatches),
		"troupe_reader_bytes":                  float64(rs.ReaderBytes),
		"troupe_reader_streams":                float64(rs.ReaderStreams),
		"troupe_reader_addresses":              float64(rs.ReaderAddrs),
		"troupe_reader_refused_total":          float64(rs.ReaderRefused),
	}
	for _, m := range metricDefs {
		kind := prometheus.GaugeValue
		if m.counter {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[m.name], kind, values[m.name])
	}
	byReason := map[string]uint64{}
	for k, v := range sm.DeadLettersByKind {
		l := reasonLabel(k)
		if l == "" {
			l = "other"
		}
		byReason[l] += v // two kinds may share a label
	}
	for label, v := range byReason {
		ch <- prometheus.MustNewConstMetric(c.descs["troupe_dead_letters_by_reason_total"], prometheus.CounterValue, float64(v), label)
	}
}
