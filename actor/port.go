package actor

// Port is the actor system as a transport sees it: how messages, replies,
// refusals and news of peers and groups from other peers come in. The
// routing and peer packages use it; applications need not (System is
// their API). A transport gets it once, from System.Port, when it is
// bound to the system. Its methods are safe for concurrent use.
//
// A transport also implements Remote (and optionally BatchRemote and
// DirectRemote) for what goes out, and GroupTransport for groups; it
// carries Envelopes, and the Signal types between peers.
type Port struct{ s *System }

// Port returns the system's transport handle.
func (s *System) Port() *Port { return &s.port }

// Peer returns the ID of the peer the system runs on (as System.Peer).
func (p *Port) Peer() string { return p.s.peer }

// System returns the system the port belongs to.
func (p *Port) System() *System { return p.s }
