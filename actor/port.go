package actor

// port is the system as its transport sees it: how messages, replies,
// refusals and news of peers and groups from other peers come in.
// transport.Port calls its methods through the hooks (spi.go); they are
// safe for concurrent use.
type port struct{ s *System }
