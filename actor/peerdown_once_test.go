package actor

import (
	"errors"
	"testing"
)

// TestOneDownPerMonitor: a monitor of a remote actor sees one Down
// whichever comes first of the two ways a lost peer fires it — the
// monitor request bounced (its stream broke: Port.Bounce) and the peer
// taken down (Port.PeerDown) — and whatever comes after.
func TestOneDownPerMonitor(t *testing.T) {
	errBroken := errors.New("stream broken")
	for _, order := range []string{"bounce-then-peerdown", "peerdown-then-bounce", "peerdown-twice"} {
		t.Run(order, func(t *testing.T) {
			r := &sentRemote{sent: make(chan envelope, 4)}
			s := newSys(t, WithPeer("me"), withRemote(r))
			far, _ := ParseRef("them/x")
			got := make(chan any, 4)
			mustSpawn(t, s, "watcher", func(c *Context) {
				c.Monitor(far)
				forever(c, func() []Case {
					return []Case{On(func(d Down) { got <- d }), On(func(m string) { got <- m })}
				})
			})
			req := recv(t, r.sent)
			if _, ok := req.Msg.(monitorSignal); !ok {
				t.Fatalf("sent %T, want the monitor request", req.Msg)
			}
			switch order {
			case "bounce-then-peerdown":
				s.port.Bounce(req, errBroken)
				s.port.PeerDown("them")
			case "peerdown-then-bounce":
				s.port.PeerDown("them")
				s.port.Bounce(req, errBroken)
			case "peerdown-twice":
				s.port.PeerDown("them")
				s.port.PeerDown("them")
			}
			d, ok := recv(t, got).(Down)
			if !ok || d.Ref != far {
				t.Fatalf("first %v, want a Down of %v", d, far)
			}
			w, _ := ParseRef("me/watcher")
			s.Send(w, "marker")
			if m := recv(t, got); m != "marker" {
				t.Fatalf("a second %T: %v", m, m)
			}
		})
	}
}
