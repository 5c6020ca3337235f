package config

import (
	"time"

	"github.com/troupe-mesh/troupe/peer"
)

// ConfigConnections is the "connections" section of config.json: the
// peer's connection budget (peer.Connections). 0 keeps a field's default.
type ConfigConnections struct {
	// Low is how many peers a trim leaves, the protected ones included,
	// and how many peers discovery dials (default 24).
	Low int `json:"low"`
	// High is how many connected peers start a trim (default 32, and
	// at least low).
	High int `json:"high"`
	// GraceSeconds is how long a new connection, or one that carried a
	// message, is left alone (default 30).
	GraceSeconds int `json:"grace_seconds"`
}

// budget returns the section as peer.Connections.
func (c ConfigConnections) budget() peer.Connections {
	return peer.Connections{Low: c.Low, High: c.High, Grace: time.Duration(c.GraceSeconds) * time.Second}
}

// validate names the first field the node could not use.
func (c ConfigConnections) validate() error {
	low := c.Low
	if low == 0 {
		low = peer.DefaultConnsLow
	}
	switch {
	case c.Low < 0:
		return configError("connections.low", "must be 0 (the default, %d) or positive", peer.DefaultConnsLow)
	case c.High < 0:
		return configError("connections.high", "must be 0 (the default, %d) or positive", peer.DefaultConnsHigh)
	case c.High != 0 && c.High < low:
		return configError("connections.high", "%d is below low (%d)", c.High, low)
	case c.GraceSeconds < 0 || c.GraceSeconds > 24*3600:
		return configError("connections.grace_seconds", "%d: must be from 0 (the default, %d) to 86400",
			c.GraceSeconds, int(peer.DefaultConnsGrace/time.Second))
	}
	return nil
}
