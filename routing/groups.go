package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// MaxGroupMessage is the largest encoded group message (GossipSub's limit,
// which must agree on all peers).
const MaxGroupMessage = 1 << 20

// GroupsConfig configures Groups.
type GroupsConfig struct {
	Host     host.Host
	Registry *codec.Registry
	Mesh     string // topics are "/troupe/<mesh>/group/<name>"
	Logger   *slog.Logger
}

// Groups carries actor group messages on GossipSub: one topic per group,
// joined while the group has a local member. It implements
// actor.GroupTransport. Publishing never blocks an event loop: messages go
// through a bounded queue to a publisher goroutine.
type Groups struct {
	cfg GroupsConfig
	ps  *pubsub.PubSub
	sys *actor.System

	ctx    context.Context // the GossipSub's lifetime: GossipSub has no Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    chan groupMsg

	mu     sync.Mutex // guards topics
	topics map[string]*groupTopic
	mesh   *meshTracer

	received, dropped, rejected atomic.Uint64
}

type groupTopic struct {
	t      *pubsub.Topic
	sub    *pubsub.Subscription
	cancel context.CancelFunc
}

type groupMsg struct {
	group string
	data  []byte
}

var _ actor.GroupTransport = (*Groups)(nil)

// NewGroups starts GossipSub on the host.
func NewGroups(cfg GroupsConfig) (*Groups, error) {
	if cfg.Host == nil || cfg.Registry == nil || cfg.Mesh == "" {
		return nil, errors.New("routing: groups need a host, a registry and a mesh name")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	g := &Groups{cfg: cfg, topics: make(map[string]*groupTopic), out: make(chan groupMsg, 1024), mesh: newMeshTracer()}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	ps, err := pubsub.NewGossipSub(g.ctx, cfg.Host,
		pubsub.WithMaxMessageSize(MaxGroupMessage),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithRawTracer(g.mesh),
	)
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("routing: gossipsub: %w", err)
	}
	g.ps = ps
	g.wg.Add(1)
	go g.publish()
	return g, nil
}

// Bind attaches the actor system that group messages are delivered to.
func (g *Groups) Bind(sys *actor.System) { g.sys = sys }

func (g *Groups) topicName(group string) string {
	return "/troupe/" + g.cfg.Mesh + "/group/" + group
}

// JoinGroup subscribes to the group's topic. Implements actor.GroupTransport.
func (g *Groups) JoinGroup(group string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := g.topics[group]
	if gt != nil && gt.sub != nil {
		return nil
	}
	if gt == nil { // else joined for publishing only so far
		t, err := g.ps.Join(g.topicName(group))
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
	g.topics[group] = gt
	g.wg.Add(1)
	go g.read(ctx, group, sub)
	return nil
}

// LeaveGroup unsubscribes from the group's topic. Implements
// actor.GroupTransport.
func (g *Groups) LeaveGroup(group string) {
	g.mu.Lock()
	gt := g.topics[group]
	delete(g.topics, group)
	g.mu.Unlock()
	if gt != nil {
		gt.stop()
		_ = gt.t.Close() // fails while a publish is in flight; the topic is then left joined
	}
}

// PublishGroup encodes msg and queues it for the group's topic. It fails at
// once for an unencodable or oversize message, or a full queue.
// Implements actor.GroupTransport.
func (g *Groups) PublishGroup(group string, from actor.Ref, msg any) error {
	typ, body, err := g.cfg.Registry.Encode(msg)
	if err != nil {
		return fmt.Errorf("routing: group message: %w", err)
	}
	data, err := codec.AppendEnvelope(nil, &codec.Envelope{Kind: codec.KindUser, To: group, FromName: from.Name(), Type: typ, Body: body})
	if err != nil {
		return fmt.Errorf("routing: group message: %w", err)
	}
	if len(data) > MaxGroupMessage {
		return fmt.Errorf("%w: group message of %d bytes, at most %d", ErrTooLarge, len(data), MaxGroupMessage)
	}
	select {
	case g.out <- groupMsg{group, data}:
		return nil
	default:
		g.dropped.Add(1)
		return fmt.Errorf("%w: group queue", ErrLinkFull)
	}
}

// publish is the publisher goroutine.
func (g *Groups) publish() {
	defer g.wg.Done()
	for {
		select {
		case <-g.ctx.Done():
			return
		case m := <-g.out:
			t, err := g.topic(m.group)
			if err == nil {
				err = t.Publish(g.ctx, m.data)
			}
			if err != nil {
				g.dropped.Add(1)
				g.cfg.Logger.Debug("routing: group publish", "group", m.group, "err", err)
			}
		}
	}
}

// topic returns the joined topic, or joins one for publishing only.
func (g *Groups) topic(group string) (*pubsub.Topic, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gt, ok := g.topics[group]; ok {
		return gt.t, nil
	}
	t, err := g.ps.Join(g.topicName(group))
	if err != nil {
		return nil, err
	}
	g.topics[group] = &groupTopic{t: t}
	return t, nil
}

// stop ends the topic's subscription, if any.
func (gt *groupTopic) stop() {
	if gt.sub != nil {
		gt.cancel()
		gt.sub.Cancel()
	}
}

// WaitReady waits until the group's topic has at least n peers in this
// peer's GossipSub mesh (a message published before the mesh formed may
// reach nobody), or ctx ends.
func (g *Groups) WaitReady(ctx context.Context, group string, n int) error {
	if _, err := g.topic(group); err != nil {
		return err
	}
	for {
		have, changed := g.mesh.peers(g.topicName(group))
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("routing: group %q has %d of %d mesh peers: %w", group, have, n, ctx.Err())
		}
	}
}

// read delivers the messages of one group's topic to the local members.
func (g *Groups) read(ctx context.Context, group string, sub *pubsub.Subscription) {
	defer g.wg.Done()
	for {
		m, err := sub.Next(ctx)
		if err != nil {
			return
		}
		var env codec.Envelope
		if err := codec.DecodeEnvelope(m.Data, &env); err != nil || env.To != group {
			g.rejected.Add(1)
			continue
		}
		msg, err := g.cfg.Registry.Decode(env.Type, env.Body)
		if err != nil {
			g.rejected.Add(1)
			continue
		}
		var from actor.Ref
		if origin, err := libp2ppeer.IDFromBytes(m.From); err == nil && env.FromName != "" {
			from, _ = actor.NewRef(origin.String(), env.FromName)
		}
		g.received.Add(1)
		if g.sys != nil {
			g.sys.DeliverGroup(group, from, msg)
		}
	}
}

// Ready reports how many peers are in this peer's GossipSub mesh for the
// group: a group message published before the mesh formed reaches nobody.
func (g *Groups) Ready(group string) int {
	n, _ := g.mesh.peers(g.topicName(group))
	return n
}

// Close stops GossipSub and waits for the group goroutines.
func (g *Groups) Close() {
	g.cancel()
	g.mu.Lock()
	for name, gt := range g.topics {
		gt.stop()
		delete(g.topics, name)
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// GroupStats are the group transport's counters.
type GroupStats struct {
	Received, Dropped, Rejected uint64
}

// Stats returns the counters.
func (g *Groups) Stats() GroupStats {
	return GroupStats{Received: g.received.Load(), Dropped: g.dropped.Load(), Rejected: g.rejected.Load()}
}
