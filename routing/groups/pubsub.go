package groups

import (
	"strings"
	"sync"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// What other peers may make this node's GossipSub hold, and how it
// judges them. GossipSub keeps, per topic a peer announces, the peer in
// that topic's table: without a filter, a peer could announce millions
// of topics. The filter admits this mesh's topics only ("/troupe/<mesh>/
// group/<name>" and "/troupe/<mesh>/ads", see TopicFilter), at most
// maxTopicsPerPeer per peer in all (pubsub's own limit is per message
// only, and refuses the whole message beyond it): a node in more groups
// than that is not known to be in the others. Peer scores count the messages a
// topic's validator rejects: each costs invalidWeight times their number
// squared, decaying by a tenth every 10 s; a peer below graylist (three
// rejected messages in a row) is ignored until its score recovers.

const (
	// A peer announces all its topics in its first message: one cap for
	// both, or an honest peer in more groups than the per-message cap
	// would have its first message ignored whole.
	maxSubsPerRPC    = maxTopicsPerPeer
	maxTopicsPerPeer = 1024
	invalidWeight    = -10
	gossipThreshold  = -10
	publishThreshold = -50
	graylist         = -80
)

// TopicFilter admits the GossipSub topics of mesh and caps what each peer
// may announce. It is safe for concurrent use.
type TopicFilter struct {
	groupPrefix, ads string

	mu     sync.Mutex
	topics map[libp2ppeer.ID]map[string]struct{} // what each peer announced, as admitted
}

var _ pubsub.SubscriptionFilter = (*TopicFilter)(nil)

// NewTopicFilter returns the filter of mesh's topics.
func NewTopicFilter(mesh string) *TopicFilter {
	return &TopicFilter{groupPrefix: "/troupe/" + mesh + "/group/", ads: "/troupe/" + mesh + "/ads", topics: make(map[libp2ppeer.ID]map[string]struct{})}
}

// CanSubscribe reports whether topic is one of the mesh's.
func (f *TopicFilter) CanSubscribe(topic string) bool {
	if topic == f.ads {
		return true
	}
	group, ok := strings.CutPrefix(topic, f.groupPrefix)
	return ok && group != "" && len(group) <= maxGroupName
}

// maxGroupName is the longest group name a topic may carry.
const maxGroupName = 4096

// FilterIncomingSubscriptions keeps from's subscriptions to the mesh's
// topics, at most maxSubsPerRPC of them and maxTopicsPerPeer in all, and
// all its unsubscriptions.
func (f *TopicFilter) FilterIncomingSubscriptions(from libp2ppeer.ID, subs []*pb.RPC_SubOpts) ([]*pb.RPC_SubOpts, error) {
	if len(subs) > maxSubsPerRPC {
		return nil, pubsub.ErrTooManySubscriptions
	}
	subs = pubsub.FilterSubscriptions(subs, f.CanSubscribe)
	f.mu.Lock()
	defer f.mu.Unlock()
	have := f.topics[from]
	out := subs[:0]
	for _, s := range subs {
		topic := s.GetTopicid()
		if !s.GetSubscribe() {
			delete(have, topic)
			out = append(out, s)
			continue
		}
		if _, ok := have[topic]; !ok && len(have) >= maxTopicsPerPeer {
			continue // over the cap: as if not announced
		}
		if have == nil {
			have = make(map[string]struct{})
			f.topics[from] = have
		}
		have[topic] = struct{}{}
		out = append(out, s)
	}
	if len(have) == 0 {
		delete(f.topics, from)
	}
	return out, nil
}

// Forget drops what peer p announced: it disconnected, and GossipSub with
// it.
func (f *TopicFilter) Forget(p libp2ppeer.ID) {
	f.mu.Lock()
	delete(f.topics, p)
	f.mu.Unlock()
}

// pubsubOptions are the options of the mesh's GossipSub that bound and
// judge other peers: the topic filter and peer scores.
func pubsubOptions(filter *TopicFilter) []pubsub.Option {
	params := &pubsub.PeerScoreParams{
		SkipAtomicValidation: true,
		// The groups' topics get theirs as they are joined; discovery's
		// advertisements topic is joined elsewhere.
		Topics:           map[string]*pubsub.TopicScoreParams{filter.ads: topicScore()},
		AppSpecificScore: func(libp2ppeer.ID) float64 { return 0 },
		DecayInterval:    time.Second,
		DecayToZero:      0.01,
		RetainScore:      10 * time.Minute, // a graylisted peer that reconnects is still graylisted
		// Peers on one LAN behind one NAT, and every test on 127.0.0.1,
		// share an address: no penalty for that.
		IPColocationFactorWeight: 0,
	}
	thresholds := &pubsub.PeerScoreThresholds{
		GossipThreshold:   gossipThreshold,
		PublishThreshold:  publishThreshold,
		GraylistThreshold: graylist,
	}
	return []pubsub.Option{
		pubsub.WithSubscriptionFilter(filter),
		pubsub.WithPeerScore(params, thresholds),
	}
}

// topicScore is the score of a topic of the mesh: rejected messages only
// (validators reject what is malformed or forged), as nothing else about
// a group's traffic tells an honest peer from another.
func topicScore() *pubsub.TopicScoreParams {
	return &pubsub.TopicScoreParams{
		SkipAtomicValidation:           true,
		TopicWeight:                    1,
		InvalidMessageDeliveriesWeight: invalidWeight,
		InvalidMessageDeliveriesDecay:  0.99, // per second: a tenth every 10 s
		// Unused (weight 0), but the score divides by it.
		TimeInMeshQuantum: time.Second,
	}
}
