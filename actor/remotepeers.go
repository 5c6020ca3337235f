package actor

// remoteEdges is transport.Port.RemoteEdges: how many monitors (either
// way), links and pending Asks tie the system's actors to actors on peer.
// Safe for concurrent use.
func (s *System) remoteEdges(peer string) int {
	s.remote.mu.Lock()
	defer s.remote.mu.Unlock()
	return len(s.remote.peers[peer])
}
