package spi

// Envelope is a message in transit between systems (transport.Envelope is
// Envelope[actor.Ref]; its fields are documented there).
type Envelope[R any] struct {
	To    R
	From  R
	Msg   any
	Corr  uint64
	Reply bool
	Size  int
}

// Outbound is one message of a run handed to a batch remote
// (transport.Outbound is Outbound[actor.Ref]).
type Outbound[R any] struct {
	To    R
	Msg   any
	Corr  uint64
	Reply bool
}

// Signal is a system message between actors (links, monitors, exits).
type Signal interface{ signal() }

// LinkSignal asks its receiver to link to the sender.
type LinkSignal struct{}

// UnlinkSignal removes the link between sender and receiver.
type UnlinkSignal struct{}

// ExitSignal tells its receiver that the sender stopped with Reason (when
// Linked) or asks it to stop. Kill makes it untrappable.
type ExitSignal struct {
	Reason error
	Linked bool
	Kill   bool
}

// MonitorSignal asks its receiver to report its exit to the sender.
type MonitorSignal[ID any] struct{ ID ID }

// DemonitorSignal cancels a MonitorSignal.
type DemonitorSignal[ID any] struct{ ID ID }

// DownSignal reports to a watcher that the sender stopped.
type DownSignal[ID any] struct {
	ID     ID
	Reason error
}

func (LinkSignal) signal()          {}
func (UnlinkSignal) signal()        {}
func (ExitSignal) signal()          {}
func (MonitorSignal[ID]) signal()   {}
func (DemonitorSignal[ID]) signal() {}
func (DownSignal[ID]) signal()      {}

// Undeliverable answers an Ask whose request reached no actor.
type Undeliverable[R any] struct {
	To     R
	Reason error
}

// The defaults of transport's options (transport documents them).
const (
	DefaultRemoteWatchLimit = 100_000
	DefaultRemoteWatchTotal = 250_000
	DefaultRemoteBacklog    = 16 << 20
	RemoteWatchFloor        = 1_000
)
