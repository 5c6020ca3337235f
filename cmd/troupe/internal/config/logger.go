package config

import (
	"fmt"
	"io"
	"log/slog"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// ParseLevel parses a log level name.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" || l.UnmarshalText([]byte(s)) != nil {
		return l, fmt.Errorf("%q: use debug, info, warn or error", s)
	}
	return l, nil
}

// NewLeveledLogger returns the logger cfg asks for, writing to w, and the
// level it logs from, which may change while it runs ('troupe log
// level'). Both formats carry the time.
func NewLeveledLogger(w io.Writer, cfg Config) (*slog.Logger, *slog.LevelVar) {
	level, _ := ParseLevel(cfg.LogLevel)
	lv := new(slog.LevelVar)
	lv.Set(level)
	opts := &slog.HandlerOptions{Level: lv}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), lv
	}
	return slog.New(slog.NewTextHandler(w, opts)), lv
}

// ParsePeerAddr parses a multiaddr that ends in /p2p/<peer ID>.
func ParsePeerAddr(s string) (libp2ppeer.AddrInfo, error) {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return libp2ppeer.AddrInfo{}, fmt.Errorf("%q is not a multiaddr: %w", s, err)
	}
	ai, err := libp2ppeer.AddrInfoFromP2pAddr(m)
	if err != nil {
		return libp2ppeer.AddrInfo{}, fmt.Errorf("%q needs a /p2p/<peer ID> suffix", s)
	}
	return *ai, nil
}
