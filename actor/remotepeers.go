package actor

// RemoteEdges returns how many monitors (either way), links and pending
// Asks tie the system's actors to actors on peer: what PeerDown would
// fire or drop. A node keeps its connection to a peer with edges from
// being trimmed by its connection manager. Safe for concurrent use.
func (s *System) RemoteEdges(peer string) int {
	s.remote.mu.Lock()
	defer s.remote.mu.Unlock()
	return len(s.remote.peers[peer])
}
