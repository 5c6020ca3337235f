package groups

import (
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	actorgroup "github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/codec"
)

// Group presence: members announce themselves on their group's topic
// (and again every presenceRenew), members of peers out of reach expire,
// and what arrives is told to the actor system as Joined and Left.
//
// presenceRenew (timings, 30 s) is how often a peer announces its members
// of each group again ("present"). A member on a peer this node is not
// connected to (one heard of through others, as GossipSub relays) leaves
// its groups here when nothing was heard of it for presenceExpiry: no
// disconnection tells this node when that peer goes.

// presenceExpiry is how long a member of a peer this node is not connected
// to stays without news: three renewals and a half.
func (g *Groups) presenceExpiry() time.Duration {
	renew := g.cfg.timings.presenceRenew
	return 3*renew + renew/2
}

// renewPresence is the goroutine that announces the local members anew and
// lets the members of peers out of reach expire, every presenceRenew.
func (g *Groups) renewPresence() {
	defer g.wg.Done()
	t := time.NewTicker(g.cfg.timings.presenceRenew)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		joined := make([]string, 0, len(g.topics))
		for name, gt := range g.topics {
			if gt.sub != nil {
				joined = append(joined, name)
			}
		}
		g.mu.Unlock()
		if len(joined) == 0 {
			continue // no member here, none known elsewhere
		}
		for _, group := range joined {
			g.announceMembers(group)
		}
		g.expire(time.Now())
	}
}

// expire reports as Left the members of peers this node is not connected
// to that were not heard of for presenceExpiry (those of connected peers
// leave when their peer disconnects).
func (g *Groups) expire(now time.Time) {
	sys := g.sys
	for group, members := range sys.RemoteMembers() {
		for _, m := range members {
			if id, err := libp2ppeer.Decode(m.Peer()); err == nil && g.cfg.Host.Network().Connectedness(id) == network.Connected {
				continue
			}
			if at, ok := g.order.heard(presenceKey{group, m.Peer(), m.Name()}); ok && now.Sub(at) < g.presenceExpiry() {
				continue
			}
			if sys.DeliverPresence(group, m, false) {
				g.expired.Add(1)
			}
		}
	}
}

// Presence message types on a group's topic (system envelopes whose
// FromName is the member).
const (
	typeJoined  = "troupe.joined"
	typeLeft    = "troupe.left"
	typePresent = "troupe.present" // "still here": sent when a topic gains a mesh peer, or asked
	// typeWho asks the other peers' members to say they are present: a
	// peer sends it when it subscribes to a group, since it forgot the
	// members of other peers when it last stopped listening (see leave),
	// and the topic's mesh, whose grafts announce them too, may take a
	// prune backoff to form again.
	typeWho = "troupe.who"
)

// AnnounceGroup publishes that member joined or left group. Implements
// transport.GroupTransport.
func (g *Groups) AnnounceGroup(group string, member actor.Ref, joined bool) {
	typ := typeLeft
	if joined {
		typ = typeJoined
	}
	g.queuePresence(group, member.Name(), typ)
}

// queuePresence queues a presence message of type typ about the local
// member called name ("" for a question to the group: typeWho).
func (g *Groups) queuePresence(group, name, typ string) {
	data, err := codec.AppendEnvelope(nil, &codec.Envelope{Kind: codec.KindSystem, To: group, FromName: name, Type: typ, Body: []byte{0xf6}})
	if err != nil {
		return
	}
	select {
	case g.out <- groupMsg{group: group, data: data}:
	default:
		g.dropped.Add(1)
	}
}

// announceMembers queues a "present" for every local member of group.
func (g *Groups) announceMembers(group string) {
	for _, m := range actorgroup.LocalMembers(g.sys.System(), group) {
		g.queuePresence(group, m.Name(), typePresent)
	}
}

// presence handles a member's joined, left or present message.
func (g *Groups) presence(group string, m *pubsub.Message, env *codec.Envelope) {
	origin, err := libp2ppeer.IDFromBytes(m.From)
	sys := g.sys
	if err != nil {
		g.rejected.Add(1)
		return
	}
	if origin == g.cfg.Host.ID() {
		return // our own announcement: local members were told directly
	}
	if env.Type == typeWho {
		select {
		case g.graft <- g.topicName(group): // answered as a graft is
		default: // full (many topics at once): the mesh's graft announces them later
		}
		return
	}
	member, err := actor.NewRef(origin.String(), env.FromName)
	if err != nil {
		g.rejected.Add(1)
		return
	}
	var joined bool
	switch env.Type {
	case typeJoined, typePresent:
		joined = true
	case typeLeft:
	default:
		g.rejected.Add(1)
		return
	}
	switch g.order.newer(presenceKey{group, member.Peer(), member.Name()}, m.GetSeqno(), joined, time.Now()) {
	case presenceStale:
		return // overtaken by a newer message about the member
	case presenceRefused:
		g.rejected.Add(1) // the publisher announced too many members
		return
	}
	sys.DeliverPresence(group, member, joined)
}
