package groups

import (
	"context"
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// A group's GossipSub topic: joined with the group's first local member,
// read by one goroutine that hands messages to the local members, left
// with the last.

// groupTopic is a joined topic: its subscription and its reader's cancel.
type groupTopic struct {
	t      *pubsub.Topic
	sub    *pubsub.Subscription
	cancel context.CancelFunc
	gen    uint64 // counts subscriptions, so a late leave spares a new one
}

// topic returns the joined topic, or joins one for publishing only.
func (g *Groups) topic(group string) (*pubsub.Topic, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gt, ok := g.topics[group]; ok {
		return gt.t, nil
	}
	t, err := g.joinTopic(group)
	if err != nil {
		return nil, err
	}
	g.topics[group] = &groupTopic{t: t}
	return t, nil
}

// joinTopic joins the group's topic with a validator that rejects (and so
// neither delivers nor forwards, and counts against the sender's score)
// messages that are not well-formed envelopes for this group.
func (g *Groups) joinTopic(group string) (*pubsub.Topic, error) {
	name := g.topicName(group)
	err := g.ps.RegisterTopicValidator(name, func(_ context.Context, _ libp2ppeer.ID, m *pubsub.Message) pubsub.ValidationResult {
		var env codec.Envelope
		if err := codec.DecodeEnvelope(m.Data, &env); err != nil || env.To != group || env.Kind == codec.KindReply {
			g.rejected.Add(1)
			return pubsub.ValidationReject
		}
		return pubsub.ValidationAccept
	})
	if err != nil {
		return nil, err
	}
	t, err := g.ps.Join(name)
	if err == nil {
		err = t.SetScoreParams(topicScore()) // rejections count against their sender
	}
	if err != nil {
		_ = g.ps.UnregisterTopicValidator(name)
		return nil, err
	}
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
			return fmt.Errorf("groups: group %q has %d of %d mesh peers: %w", group, have, n, ctx.Err())
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
		if env.Kind == codec.KindSystem {
			g.presence(group, m, &env)
			continue
		}
		msg, err := g.cfg.Registry.Decode(env.Type, env.Body)
		if _, raw := msg.(codec.Raw); err != nil || raw {
			// A type unknown here would sit unmatched in typed members'
			// mailboxes; members cannot opt in per group message.
			g.rejected.Add(1)
			continue
		}
		var from actor.Ref
		if origin, err := libp2ppeer.IDFromBytes(m.From); err == nil {
			name := env.FromName
			if name == "" {
				name = routing.AnonymousSender // never the zero Ref of local code
			}
			from, _ = actor.NewRef(origin.String(), name)
		}
		g.received.Add(1)
		g.sys.DeliverGroup(group, from, msg)
	}
}

// Ready reports how many peers are in this peer's GossipSub mesh for the
// group: a group message published before the mesh formed reaches nobody.
func (g *Groups) Ready(group string) int {
	n, _ := g.mesh.peers(g.topicName(group))
	return n
}
