package daemon

import (
	"fmt"
	"io"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/chat"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// Watch asks a daemon's "watcher" actor to monitor an actor and print a line
// when it stops: "down <ref> <reason>".
type Watch struct{ Ref string }

// Info is what a daemon's "info" actor replies to any message.
type Info struct {
	Peer    string   `json:"peer"`
	Version string   `json:"version"`
	Mesh    string   `json:"mesh"`
	Uptime  float64  `json:"uptime_seconds"`
	Actors  []string `json:"actors"`
	Groups  []string `json:"groups"`
}

// NewRegistry returns a codec registry with the types the daemon, the CLI
// and the chat exchange with other peers.
func NewRegistry() (*codec.Registry, error) {
	reg, err := codec.NewRegistry()
	if err != nil {
		return nil, err
	}
	codec.MustRegister[Watch](reg, "troupe.Watch")
	codec.MustRegister[Info](reg, "troupe.Info")
	chat.Register(reg)
	return reg, nil
}

// startBuiltins spawns the daemon's built-in actors: echo replies with what
// it got, of any type (it takes types unknown here); info replies with an Info; watcher monitors the actors it is told
// to and prints their Down.
func startBuiltins(n *peer.Node, mesh, version string, started time.Time, out io.Writer) error {
	sys := n.System()
	if _, err := sys.Spawn("echo", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { c.Reply(m); c.Receive(h) })
		c.Receive(h)
	}, actor.AcceptUnknownTypes()); err != nil { // echoes what the CLI sends as JSON
		return err
	}
	if _, err := sys.Spawn("info", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(any) {
			c.Reply(Info{
				Peer: n.ID().String(), Version: version, Mesh: mesh,
				Uptime: time.Since(started).Round(time.Millisecond).Seconds(), Actors: sys.Names(), Groups: group.Names(sys),
			})
			c.Receive(h)
		})
		c.Receive(h)
	}, actor.AcceptUnknownTypes()); err != nil { // answers any message
		return err
	}
	_, err := sys.Spawn("watcher", func(c *actor.Context) { watcher(c, out) })
	return err
}

// maxWatches is the most actors the daemon's watcher monitors at once.
const maxWatches = 1024

// watcher monitors the actors the local peer (the CLI, through the
// daemon) tells it to and prints their Down; requests from other peers
// are refused (one from no actor there has the sender <peer>/$): a peer
// could otherwise make it hold monitors without bound, dial made-up peers
// and print what it likes.
//
// An actor already watched is not monitored again: each watched actor
// gets one monitor, so one "down" line, however often it is asked for.
func watcher(c *actor.Context, out io.Writer) {
	watching := 0
	watched := map[actor.Ref]bool{}
	var h actor.Case
	h = actor.Any(func(m any) {
		switch m := m.(type) {
		case Watch:
			switch ref, err := actor.ParseRef(m.Ref); {
			case c.Sender().Peer() != c.Self().Peer():
				c.Reply(false)
			case err != nil:
				fmt.Fprintf(out, "bad watch %q: %s\n", m.Ref, cli.Clean(err.Error()))
				c.Reply(false)
			case watched[ref]:
				fmt.Fprintf(out, "watching %s already\n", ref)
				c.Reply(true)
			case watching >= maxWatches:
				fmt.Fprintf(out, "not watching %s: already watching %d actors\n", ref, watching)
				c.Reply(false)
			default:
				watching++
				watched[ref] = true
				c.Monitor(ref)
				fmt.Fprintf(out, "watching %s\n", ref)
				c.Reply(true)
			}
		case actor.Down:
			watching--
			delete(watched, m.Ref)
			fmt.Fprintf(out, "down %s %s\n", m.Ref, cli.Clean(fmt.Sprint(m.Reason)))
		}
		c.Receive(h)
	})
	c.Receive(h)
}
