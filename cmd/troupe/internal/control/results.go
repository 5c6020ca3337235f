package control

import (
	"encoding/json"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

// The results of the control requests, as JSON (also what --json prints).

// IDResult answers an id request: the daemon's identity, addresses and mesh.
type IDResult struct {
	ID string `json:"id"`
	// Reachability is public, private or unknown (AutoNAT).
	Reachability string   `json:"reachability"`
	Addrs        []string `json:"addrs"`
	Mesh         string   `json:"mesh"`
	Version      string   `json:"version"`
	Home         string   `json:"home"`
	// HolePunches are the hole punches tried and succeeded (with relays).
	HolePunches HolePunchCount `json:"hole_punches"`
	// MovedOffRelay counts the link streams ended cleanly on a relayed
	// connection once a direct one came (docs/nat.md).
	MovedOffRelay uint64 `json:"moved_off_relay"`
	// Offline: no daemon runs; the rest is what the home says.
	Offline bool `json:"offline,omitempty"`
	// GCHeapFloor is the actor system's GC heap floor in force (bytes 0
	// and a reason when none is; actor.WithGCHeapFloor).
	GCHeapFloor actor.GCHeapFloor `json:"gc_heap_floor"`
	// MemoryRelease says whether the daemon gives freed heap back to the
	// system once quiet: "on", or "off: " and why (GOGC or GOMEMLIMIT set).
	MemoryRelease string `json:"memory_release"`
}

// HolePunchCount counts the hole punches tried and succeeded.
type HolePunchCount struct {
	Tried     uint64 `json:"tried"`
	Succeeded uint64 `json:"succeeded"`
}

// PeerInfo is a connected peer as a peers request lists it.
type PeerInfo struct {
	ID        string   `json:"id"`
	Addrs     []string `json:"addrs"`
	LatencyMS float64  `json:"latency_ms,omitempty"`
	Relayed   bool     `json:"relayed,omitempty"` // through relays only, no direct connection
	Actors    []string `json:"actors,omitempty"`
	Groups    []string `json:"groups,omitempty"`
}

// ActorsResult answers an actors request: a peer's named actors.
type ActorsResult struct {
	Peer   string   `json:"peer"`
	Actors []string `json:"actors"`
}

// AskResult answers an ask request: the reply's type, the reply as JSON
// and the round trip.
type AskResult struct {
	Type  string          `json:"type"`
	Reply json.RawMessage `json:"reply"`
	RTTMS float64         `json:"rtt_ms"`
}

// PingResult answers a ping request: the libp2p pings' round trips and
// the echo actor's.
type PingResult struct {
	Peer   string    `json:"peer"`
	RTTsMS []float64 `json:"rtts_ms"`
	EchoMS float64   `json:"echo_ms"`
}

// ConnectResult is the answer to a connect request.
type ConnectResult struct {
	Peer    string `json:"peer"`
	Relayed bool   `json:"relayed"` // through relays only, for now
	// Already: the peer was connected before, through Via, none of the
	// addresses given; those were not dialed (libp2p keeps the connection
	// it has).
	Already bool   `json:"already,omitempty"`
	Via     string `json:"via,omitempty"`
}

// SendResult is the answer to a send request.
type SendResult struct {
	To string `json:"to"`
	// Status is delivered (the actor replied within the wait), sent (to a
	// live local actor's mailbox) or unconfirmed (no reply and no bounce
	// within the wait, or no wait).
	Status string `json:"status"`
	WaitMS int64  `json:"wait_ms,omitempty"`
}

// DeadLetter is one record as JSON (what --json prints, one per line
// with --follow).
type DeadLetter struct {
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	To       string    `json:"to"`
	From     string    `json:"from,omitempty"`
	FromPeer string    `json:"from_peer,omitempty"`
	Type     string    `json:"type"`
	Size     int       `json:"size"` // bytes of the encoding; -1 unknown
	Kind     string    `json:"kind"`
	Reason   string    `json:"reason"`
}

// DeadLettersResult answers a deadletters request.
type DeadLettersResult struct {
	Total  uint64            `json:"total"`   // dead letters since the daemon started
	ByKind map[string]uint64 `json:"by_kind"` // per reason kind
	Kept   int               `json:"kept"`    // how many the daemon remembers at most
	Recent []DeadLetter      `json:"recent"`  // oldest first
	// Omitted counts older records kept but left out of this answer to
	// bound its size (the daemon's answer limit).
	Omitted int `json:"omitted,omitempty"`
}

// StopResult is the daemon's answer to "stop".
type StopResult struct {
	Peer string `json:"peer"`
}

// LogLevelResult answers a loglevel request.
type LogLevelResult struct {
	Level    string `json:"level"`
	Previous string `json:"previous,omitempty"` // when it was changed
}

// DoctorResult is the daemon's answer to the "doctor" request.
type DoctorResult struct {
	ID           string       `json:"id"`
	Mesh         string       `json:"mesh"` // its own: -mesh may differ from config.json
	Addrs        []string     `json:"addrs"`
	Public       bool         `json:"public"`       // it listens on a public address
	Reachability string       `json:"reachability"` // public, private or unknown (AutoNAT)
	Peers        int          `json:"peers"`
	DialFailures []DialReport `json:"dial_failures"`
}

// DialReport is a dial that failed, as DoctorResult lists it.
type DialReport struct {
	Peer  string   `json:"peer"`
	Addrs []string `json:"addrs"`
	Err   string   `json:"error"`
	Ago   string   `json:"ago"`
}
