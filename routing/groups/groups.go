package groups

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// MaxMessage is the largest encoded group message (GossipSub's limit,
// which must agree on all peers).
const MaxMessage = 1 << 20

// validateQueue is how many received messages may await validation.
const validateQueue = 1024

// pruneBackoff is how long a pruned peer waits before grafting again
// (GossipSub's default is a minute, during which a new peer whose only
// topic peer pruned it has no mesh and misses most messages).
const pruneBackoff = 10 * time.Second

// outboundQueue is how many RPCs may wait for one peer (default 32, which
// overflows while a hundred peers connect at once).
const outboundQueue = 256

// Groups carries actor group messages on GossipSub: one topic per group,
// joined while the group has a local member. It implements
// transport.GroupTransport. Publishing never blocks an event loop: messages go
// through a bounded queue to a publisher goroutine.
type Groups struct {
	cfg    config
	ps     *pubsub.PubSub
	sys    *transport.Port // the system's transport handle (config.Port)
	filter *TopicFilter    // what peers may subscribe to

	ctx    context.Context // the GossipSub's lifetime: GossipSub has no Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    chan groupMsg
	graft  chan string // topics that gained a mesh peer: announce our members

	mu     sync.Mutex // guards topics
	topics map[string]*groupTopic
	mesh   *meshTracer
	order  presenceOrder

	received, dropped, rejected, expired atomic.Uint64
}

// groupMsg is a message to publish, or (leave) the unsubscription of a
// group, queued behind the group's last messages.
type groupMsg struct {
	group string
	data  []byte
	leave bool
	gen   uint64
}

var _ transport.GroupTransport = (*Groups)(nil)

// New starts GossipSub on h for mesh: group topics are
// "/troupe/<mesh>/group/<name>", their messages of the types of reg.
// Its messages go to and from the actor system of p: call it in the
// transport.Factory given to transport.NewSystem, next to routing.New,
// and return the Groups as the system's GroupTransport.
func New(h host.Host, reg *codec.Registry, mesh string, p *transport.Port, opts ...Option) (*Groups, error) {
	cfg, err := apply(config{Host: h, Registry: reg, Mesh: mesh, Port: p}, opts)
	if err != nil {
		return nil, err
	}
	return newGroups(cfg)
}

// newGroups is New on a config (tests build theirs).
func newGroups(cfg config) (*Groups, error) {
	if cfg.Host == nil || cfg.Registry == nil || cfg.Mesh == "" || cfg.Port == nil {
		return nil, fmt.Errorf("%w: groups need a host, a registry, a mesh name and a port", ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.timings = cfg.timings.withDefaults()
	g := &Groups{cfg: cfg, sys: cfg.Port, topics: make(map[string]*groupTopic), out: make(chan groupMsg, 1024), graft: make(chan string, 64), mesh: newMeshTracer()}
	g.mesh.onGraft = func(topic string) {
		select {
		case g.graft <- topic:
		default: // a later graft announces again
		}
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	params := pubsub.DefaultGossipSubParams()
	params.PruneBackoff = pruneBackoff
	g.filter = NewTopicFilter(cfg.Mesh)
	ps, err := pubsub.NewGossipSub(g.ctx, cfg.Host, append(pubsubOptions(g.filter),
		pubsub.WithGossipSubParams(params),
		// A peer that a full mesh prunes (a bootstrap peer that every new
		// peer grafts) learns other peers of the topic to graft instead.
		pubsub.WithPeerExchange(true),
		pubsub.WithMaxMessageSize(MaxMessage),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithRawTracer(g.mesh),
		// The default queue of 32 messages awaiting validation overflows
		// (and drops) when a hundred peers start together on two cores.
		pubsub.WithValidateQueueSize(validateQueue),
		pubsub.WithPeerOutboundQueueSize(outboundQueue),
	)...)
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("groups: gossipsub: %w", err)
	}
	g.ps = ps
	sub, err := cfg.Host.EventBus().Subscribe([]any{new(event.EvtPeerConnectednessChanged), new(routing.EvtPeerRestarted)})
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("groups: event bus: %w", err)
	}
	g.wg.Add(3)
	go g.publish()
	go g.watchPeers(sub)
	go g.renewPresence()
	return g, nil
}

// watchPeers reports the group members of a departed peer as Left, and
// those of a peer that restarted (its former incarnation's members are
// gone; the new one's announce themselves).
func (g *Groups) watchPeers(sub event.Subscription) {
	defer g.wg.Done()
	defer sub.Close()
	for {
		select {
		case <-g.ctx.Done():
			return
		case ev, ok := <-sub.Out():
			if !ok {
				return
			}
			if e, ok := ev.(routing.EvtPeerRestarted); ok {
				g.sys.PeerLeftGroups(e.Peer.String())
				continue
			}
			e := ev.(event.EvtPeerConnectednessChanged)
			if e.Connectedness != network.NotConnected {
				g.order.peerBack(e.Peer.String())
				continue
			}
			g.order.peerGone(e.Peer.String(), time.Now())
			if g.cfg.Host.Network().Connectedness(e.Peer) != network.Connected {
				g.filter.Forget(e.Peer) // not what it announced since it came back
			}
			if left := g.cfg.Departed; left != nil && !left(e.Peer) {
				continue // its members stay while their presence is renewed (expire)
			}
			g.sys.PeerLeftGroups(e.Peer.String())
		}
	}
}

func (g *Groups) topicName(group string) string {
	return "/troupe/" + g.cfg.Mesh + "/group/" + group
}

// JoinGroup subscribes to the group's topic. Implements transport.GroupTransport.
func (g *Groups) JoinGroup(group string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := g.topics[group]
	if gt != nil && gt.sub != nil {
		gt.gen++ // cancels an unsubscription queued by a leave just before
		return nil
	}
	if gt == nil { // else joined for publishing only so far
		t, err := g.joinTopic(group)
		if err != nil {
			return err
		}
		gt = &groupTopic{t: t}
	}
	sub, err := gt.t.Subscribe(pubsub.WithBufferSize(1024))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(g.ctx)
	gt.sub, gt.cancel = sub, cancel
	gt.gen++
	g.topics[group] = gt
	g.wg.Add(1)
	go g.read(ctx, group, sub)
	// After the subscription, so that the others know of it when they
	// answer (GossipSub announces it first, on the same stream).
	g.queuePresence(group, "", typeWho)
	g.changed()
	return nil
}

func (g *Groups) changed() {
	if g.cfg.OnChange != nil {
		g.cfg.OnChange()
	}
}

// LeaveGroup unsubscribes from the group's topic once the messages queued
// before it (the members' Left) are published. Implements
// transport.GroupTransport.
func (g *Groups) LeaveGroup(group string) {
	g.mu.Lock()
	var gen uint64
	if gt := g.topics[group]; gt != nil {
		gen = gt.gen
	}
	g.mu.Unlock()
	select {
	case g.out <- groupMsg{group: group, leave: true, gen: gen}:
	default:
		g.leave(group, gen) // the queue is full: leave at once
	}
}

// leave unsubscribes from group unless it was joined again since. The
// whole leave holds g.mu, so that a join racing it finds the topic either
// still joined or fully left (its validator unregistered).
func (g *Groups) leave(group string, gen uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := g.topics[group]
	if gt == nil || gt.gen != gen {
		return
	}
	delete(g.topics, group)
	if gt.sub != nil {
		// No Left will come from the members on other peers once the
		// subscription ends: forget them first (a presence message still
		// on its way finds no local member and is ignored).
		g.sys.ForgetGroupMembers(group)
	}
	gt.stop()
	if gt.t.Close() == nil {
		_ = g.ps.UnregisterTopicValidator(g.topicName(group))
	}
	if gt.sub != nil {
		g.changed()
	}
}

// PublishGroup encodes msg and queues it for the group's topic. It fails at
// once for an unencodable or oversize message, or a full queue.
// Implements transport.GroupTransport.
func (g *Groups) PublishGroup(group string, from actor.Ref, msg any) error {
	typ, body, err := g.cfg.Registry.Encode(msg)
	if err != nil {
		return fmt.Errorf("groups: group message: %w", err)
	}
	data, err := codec.AppendEnvelope(nil, &codec.Envelope{Kind: codec.KindUser, To: group, FromName: from.Name(), Type: typ, Body: body})
	if err != nil {
		return fmt.Errorf("groups: group message: %w", err)
	}
	if len(data) > MaxMessage {
		return fmt.Errorf("%w: group message of %d bytes, at most %d", routing.ErrTooLarge, len(data), MaxMessage)
	}
	select {
	case g.out <- groupMsg{group: group, data: data}:
		return nil
	default:
		g.dropped.Add(1)
		return fmt.Errorf("%w: group queue", routing.ErrLinkFull)
	}
}

// publish is the publisher goroutine.
func (g *Groups) publish() {
	defer g.wg.Done()
	gate := newAnnounceGate(announceGap)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	arm := func() {
		if at, ok := gate.next(); ok {
			timer.Reset(time.Until(at))
		}
	}
	for {
		select {
		case <-g.ctx.Done():
			return
		case topic := <-g.graft:
			if group, ok := strings.CutPrefix(topic, g.topicName("")); ok {
				if gate.ask(group, time.Now()) {
					g.announceMembers(group)
				}
				arm()
			}
		case <-timer.C:
			for _, group := range gate.due(time.Now()) {
				g.announceMembers(group)
			}
			arm()
		case m := <-g.out:
			if m.leave {
				g.leave(m.group, m.gen)
				continue
			}
			t, err := g.topic(m.group)
			if err == nil {
				err = t.Publish(g.ctx, m.data)
			}
			if err != nil {
				g.dropped.Add(1)
				g.cfg.Logger.Debug("groups: publish", "group", m.group, "err", err)
			}
		}
	}
}

// Close stops GossipSub's topics and waits for the group goroutines
// (ctx is accepted for the library's uniform Close(ctx) error: every
// goroutine here ends at once when told to, so Close waits for them
// whatever ctx says, as routing.Router.Close does after its drain.)
func (g *Groups) Close(context.Context) error {
	g.cancel()
	g.mu.Lock()
	for name, gt := range g.topics {
		gt.stop()
		delete(g.topics, name)
	}
	g.mu.Unlock()
	g.wg.Wait()
	return nil
}

// Stats are the group transport's counters.
type Stats struct {
	Received uint64 // group messages received and handed to local members
	Dropped  uint64 // group messages not published: a full outbound queue, or GossipSub refused them
	Expired  uint64 // members of peers out of reach that left for lack of news (presenceExpiry)
	Rejected uint64 // group messages received and refused: malformed, undecodable, of a type unknown here, of no sender, or a member's join beyond the presence bounds (maxPresencePerPeer, maxPresence)
}

// Stats returns the counters.
func (g *Groups) Stats() Stats {
	return Stats{Received: g.received.Load(), Dropped: g.dropped.Load(), Rejected: g.rejected.Load(), Expired: g.expired.Load()}
}

// PubSub returns the GossipSub instance, for other users of the mesh's
// topics (advertisements). Its lifetime is the Groups'.
func (g *Groups) PubSub() *pubsub.PubSub { return g.ps }
