package groups

import (
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// meshTracer follows GossipSub's mesh per topic (GRAFT and PRUNE): a group
// is ready for publishing when its topic has mesh peers, not merely known
// subscribers. GossipSub calls it synchronously on its event loop; it only
// updates a map.
type meshTracer struct {
	mu     sync.Mutex // guards mesh
	mesh   map[string]map[libp2ppeer.ID]struct{}
	change chan struct{} // closed and replaced at every change

	onGraft func(topic string) // set before GossipSub starts; must not block
}

func newMeshTracer() *meshTracer {
	return &meshTracer{mesh: make(map[string]map[libp2ppeer.ID]struct{}), change: make(chan struct{})}
}

// peers returns the topic's mesh size and a channel closed at the next
// change.
func (m *meshTracer) peers(topic string) (int, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mesh[topic]), m.change
}

func (m *meshTracer) changedLocked() {
	close(m.change)
	m.change = make(chan struct{})
}

// Graft records p in topic's mesh and runs onGraft (pubsub.RawTracer).
func (m *meshTracer) Graft(p libp2ppeer.ID, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mesh[topic] == nil {
		m.mesh[topic] = make(map[libp2ppeer.ID]struct{})
	}
	m.mesh[topic][p] = struct{}{}
	m.changedLocked()
	if m.onGraft != nil {
		m.onGraft(topic)
	}
}

// Prune removes p from topic's mesh (pubsub.RawTracer).
func (m *meshTracer) Prune(p libp2ppeer.ID, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mesh[topic], p)
	m.changedLocked()
}

// Leave forgets topic's mesh: this node left the topic (pubsub.RawTracer).
func (m *meshTracer) Leave(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mesh, topic)
	m.changedLocked()
}

// The other events of pubsub.RawTracer are of no use here.
func (m *meshTracer) OnNewOutboundStream(libp2ppeer.ID, protocol.ID)             {}
func (m *meshTracer) OnClosedOutboundStream(libp2ppeer.ID)                       {}
func (m *meshTracer) Join(string)                                                {}
func (m *meshTracer) ValidateMessage(*pubsub.Message)                            {}
func (m *meshTracer) DeliverMessage(*pubsub.Message)                             {}
func (m *meshTracer) RejectMessage(*pubsub.Message, string)                      {}
func (m *meshTracer) DuplicateMessage(*pubsub.Message)                           {}
func (m *meshTracer) ThrottlePeer(libp2ppeer.ID)                                 {}
func (m *meshTracer) RecvRPC(*pubsub.RPC)                                        {}
func (m *meshTracer) SendRPC(*pubsub.RPC, libp2ppeer.ID)                         {}
func (m *meshTracer) SendRPCCompleted(*pubsub.RPC, libp2ppeer.ID, time.Duration) {}
func (m *meshTracer) DropRPC(*pubsub.RPC, libp2ppeer.ID)                         {}
func (m *meshTracer) UndeliverableMessage(*pubsub.Message)                       {}

var _ pubsub.RawTracer = (*meshTracer)(nil)
