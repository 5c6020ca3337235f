package daemon

import (
	"time"

	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/meshview"
)

// sampleView takes a sample of the daemon's node, without rates.
func (d *Daemon) sampleView(now time.Time) meshview.View {
	st := d.node.Stats()
	v := meshview.View{
		Time: now, Self: d.id(),
		Sent: st.Sent, Received: st.Received, DeadLetters: d.node.System().DeadLetters(),
		Peers: []meshview.Peer{},
		Budgets: meshview.Budgets{
			ReaderBytes: st.ReaderBytes, ReaderStreams: st.ReaderStreams,
			ReaderPeers: st.ReaderPeers, ReaderAddrs: st.ReaderAddrs, ReaderRefused: st.ReaderRefused,
			RemoteWatches: d.node.RemoteWatches(),
		},
	}
	v.Actors, v.MoreActors = meshview.CapNames(d.node.System().Names())
	v.Groups, v.MoreGroups = meshview.CapNames(group.Names(d.node.System()))
	traffic := map[string]int{}
	stats := d.node.PeerStats()
	for i, p := range stats {
		traffic[p.Peer.String()] = i
	}
	for _, p := range d.peers() {
		vp := meshview.Peer{PeerInfo: p}
		vp.Actors, vp.MoreActors = meshview.CapNames(p.Actors)
		vp.Groups, vp.MoreGroups = meshview.CapNames(p.Groups)
		if i, ok := traffic[p.ID]; ok {
			s := stats[i]
			vp.Sent, vp.Received, vp.Queued, vp.HeldBytes = s.Sent, s.Received, s.Queued, s.Held
		}
		v.Peers = append(v.Peers, vp)
	}
	return v
}
