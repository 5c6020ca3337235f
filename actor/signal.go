package actor

// MonitorID identifies one monitor; Down carries it.
type MonitorID uint64

// Down is the message a monitoring actor receives when the actor it watches
// stops. Reason is nil for a normal exit, ErrNoSuchActor when the actor did
// not exist, ErrNodeDown when its peer went away.
type Down struct {
	Ref    Ref       // the actor that was watched
	ID     MonitorID // what Monitor returned for this monitor
	Reason error     // why it stopped; nil for a normal exit
}

// Exit is the message an actor that traps exits receives when a linked actor
// stops (or an exit signal is sent to it). Reason is nil for a normal exit.
type Exit struct {
	From   Ref   // the linked actor that stopped, or the sender of the exit signal
	Reason error // why it stopped; nil for a normal exit
}

// Undeliverable answers an Ask whose request reached no actor; the asker
// sees Reason as its error.
type Undeliverable struct {
	To     Ref   // the actor the request was sent to; may be zero when another peer answered
	Reason error // why it was not delivered, e.g. ErrNoSuchActor or ErrNodeDown
}

// Signal is a system message between actors: links, monitors and exit
// signals. Signals are handled by the runtime, never by cases; they are
// exported so that a Remote can carry them between peers.
type Signal interface{ signal() }

// LinkSignal asks its receiver to link to the sender.
type LinkSignal struct{}

// UnlinkSignal removes the link between sender and receiver.
type UnlinkSignal struct{}

// ExitSignal tells its receiver that the sender stopped with Reason (when
// Linked) or asks it to stop. Kill makes it untrappable.
type ExitSignal struct {
	Reason error // the sender's exit reason, or why the receiver should stop; nil for normal
	Linked bool  // the sender was linked and stopped; ignored if unlinked meanwhile
	Kill   bool  // stop the receiver even if it traps exits (with ErrKilled if Reason is nil)
}

// MonitorSignal asks its receiver to report its exit to the sender.
type MonitorSignal struct {
	ID MonitorID // the monitor's ID, numbered by the watcher's system
}

// DemonitorSignal cancels a MonitorSignal.
type DemonitorSignal struct {
	ID MonitorID // the ID of the monitor to cancel
}

// DownSignal reports to a watcher that the sender stopped.
type DownSignal struct {
	ID     MonitorID // the ID from the watcher's MonitorSignal
	Reason error     // why the sender stopped; nil for a normal exit
}

func (LinkSignal) signal()      {}
func (UnlinkSignal) signal()    {}
func (ExitSignal) signal()      {}
func (MonitorSignal) signal()   {}
func (DemonitorSignal) signal() {}
func (DownSignal) signal()      {}

// Link links this actor to ref: when either stops abnormally, the other
// gets an exit signal (and stops too unless it traps exits). Linking to an
// actor that does not exist sends this actor an exit signal with
// ErrNoSuchActor.
func (c *Context) Link(ref Ref) {
	e := c.extra()
	if e.links == nil {
		e.links = make(map[Ref]struct{})
	}
	e.links[ref] = struct{}{}
	c.trackRemote(edgeLink, ref, 0, true)
	c.sys.send(ref, c.Self(), LinkSignal{}, 0, kindSignal)
}

// Unlink removes the link to ref, in both directions.
func (c *Context) Unlink(ref Ref) {
	if c.ext != nil {
		delete(c.ext.links, ref)
	}
	c.trackRemote(edgeLink, ref, 0, false)
	c.sys.send(ref, c.Self(), UnlinkSignal{}, 0, kindSignal)
}

// Monitor makes this actor receive Down when ref stops (at once, with
// ErrNoSuchActor, when it does not exist).
func (c *Context) Monitor(ref Ref) MonitorID {
	id := MonitorID(c.sys.ids.Add(1))
	e := c.extra()
	if e.watching == nil {
		e.watching = make(map[MonitorID]Ref)
	}
	e.watching[id] = ref
	c.trackRemote(edgeMonitor, ref, id, true)
	c.sys.send(ref, c.Self(), MonitorSignal{ID: id}, 0, kindSignal)
	return id
}

// Demonitor cancels a monitor. A Down for it that is already on its way is
// dropped.
func (c *Context) Demonitor(id MonitorID) {
	if c.ext == nil {
		return
	}
	ref, ok := c.ext.watching[id]
	if !ok {
		return
	}
	delete(c.ext.watching, id)
	c.trackRemote(edgeMonitor, ref, id, false)
	c.sys.send(ref, c.Self(), DemonitorSignal{ID: id}, 0, kindSignal)
}

// isRemote reports whether ref is an actor of another peer.
func (c *Context) isRemote(ref Ref) bool {
	return !ref.on(c.sys.peer) && !ref.IsZero()
}

// linkedTo reports whether this actor is linked to ref.
func (c *Context) linkedTo(ref Ref) bool {
	if c.ext == nil {
		return false
	}
	_, ok := c.ext.links[ref]
	return ok
}

// monitorEdge is one monitor of an actor: its ID and the actor that holds it.
// IDs are numbered by the watcher's system, so watchers on different peers
// can use the same ID: only the pair names a monitor, and only the watcher
// itself can cancel it.
type monitorEdge struct {
	id  MonitorID
	ref Ref
}

// signal handles a signal node. It reports true when the node became a
// message for the cases (Down, or Exit while trapping exits).
func (c *Context) signal(n *node) bool {
	switch s := n.msg.(type) {
	case shedSignal:
		c.shed(s.credit)
	case LinkSignal:
		if c.isRemote(n.from) && c.opts&oAcceptRemoteLinks == 0 && !c.linkedTo(n.from) {
			c.sys.send(n.from, c.Self(), ExitSignal{Reason: ErrLinkRefused, Linked: true}, 0, kindSignal)
			return false
		}
		if !c.admitRemote(edgeLink, n.from, 0) {
			c.sys.send(n.from, c.Self(), ExitSignal{Reason: ErrSystemLimit, Linked: true}, 0, kindSignal)
			return false
		}
		e := c.extra()
		if e.links == nil {
			e.links = make(map[Ref]struct{})
		}
		e.links[n.from] = struct{}{}
	case UnlinkSignal:
		if c.ext != nil {
			delete(c.ext.links, n.from)
		}
		c.trackRemote(edgeLink, n.from, 0, false)
	case MonitorSignal:
		if !c.admitRemote(edgeWatcher, n.from, s.ID) {
			c.sys.send(n.from, c.Self(), DownSignal{ID: s.ID, Reason: ErrSystemLimit}, 0, kindSignal)
			return false
		}
		e := c.extra()
		if e.watchers == nil {
			e.watchers = make(map[monitorEdge]struct{})
		}
		e.watchers[monitorEdge{s.ID, n.from}] = struct{}{}
	case DemonitorSignal:
		if c.ext != nil {
			delete(c.ext.watchers, monitorEdge{s.ID, n.from})
		}
		c.trackRemote(edgeWatcher, n.from, s.ID, false)
	case DownSignal:
		if c.ext == nil {
			return false
		}
		if ref, ok := c.ext.watching[s.ID]; !ok || !ref.same(n.from) {
			return false // demonitored, or not from the actor watched under that ID
		}
		delete(c.ext.watching, s.ID)
		c.trackRemote(edgeMonitor, n.from, s.ID, false)
		n.msg, n.kind = Down{Ref: n.from, ID: s.ID, Reason: s.Reason}, kindUser
		return true
	case ExitSignal:
		remote := c.isRemote(n.from)
		if remote && !c.linkedTo(n.from) {
			return false // a remote exit travels along a link only
		}
		if s.Kill && !remote { // a remote one is trappable, as any exit
			reason := s.Reason
			if reason == nil {
				reason = ErrKilled
			}
			c.Exit(reason)
			return false
		}
		if s.Linked {
			if !c.linkedTo(n.from) {
				return false // unlinked meanwhile
			}
			delete(c.ext.links, n.from)
			c.trackRemote(edgeLink, n.from, 0, false)
		}
		if c.flags&fTrapExit != 0 {
			n.msg, n.kind = Exit{From: n.from, Reason: s.Reason}, kindUser
			return true
		}
		if s.Reason != nil {
			c.Exit(s.Reason)
		}
	}
	return false
}
