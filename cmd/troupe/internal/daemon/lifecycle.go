package daemon

import (
	"errors"
	"fmt"
	"strings"
	"time"

	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/peer"
)

// requestStop answers a request to stop: the returned func, run once the
// answer is written (the daemon then closes the control socket), stops
// the daemon as SIGTERM does. A chat's own peer refuses (the chat ends it
// with /quit).
func (d *Daemon) requestStop() (any, func(), error) {
	if d.embeddedChat {
		return nil, nil, errors.New("this peer belongs to a 'troupe chat': end the chat with /quit")
	}
	return control.StopResult{Peer: d.node.ID().String()}, func() { d.stopOnce.Do(func() { close(d.stopped) }) }, nil
}

// logLevel sets the daemon's log level (libp2p's follows) when level is
// not empty, and says what it is. It lasts until the daemon stops;
// config log_level is the level it starts with.
func (d *Daemon) logLevel(level string) (control.LogLevelResult, error) {
	was := d.level.Level()
	r := control.LogLevelResult{Level: levelName(was)}
	if level == "" {
		return r, nil
	}
	l, err := config.ParseLevel(level)
	if err != nil {
		return r, fmt.Errorf("%w: log level %v", config.ErrUsage, err)
	}
	d.level.Set(l)
	peer.SetLibp2pLevel(l)
	d.log.Info("log level changed", "level", levelName(l), "previous", levelName(was))
	return control.LogLevelResult{Level: levelName(l), Previous: levelName(was)}, nil
}

// levelName is a level as config log_level spells it.
func levelName(l interface{ String() string }) string { return strings.ToLower(l.String()) }

// doctorInfo answers the "doctor" control request.
func (d *Daemon) doctorInfo() control.DoctorResult {
	r := control.DoctorResult{ID: d.node.ID().String(), Mesh: d.cfg.Mesh, Reachability: strings.ToLower(d.node.Reachability().String()), Addrs: []string{}, Peers: len(d.node.Peers()), DialFailures: []control.DialReport{}}
	for _, a := range d.node.Addrs() {
		r.Addrs = append(r.Addrs, a.String())
		r.Public = r.Public || manet.IsPublicAddr(a)
	}
	for _, f := range d.node.DialFailures() {
		r.DialFailures = append(r.DialFailures, control.DialReport{Peer: f.Peer.String(), Addrs: f.Addrs, Err: cli.Clean(f.Err), Ago: time.Since(f.At).Round(time.Second).String()})
	}
	return r
}
