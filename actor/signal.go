package actor

import "github.com/troupe-mesh/troupe/actor/internal/spi"

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

// The signals between actors, and the answer to an Ask that reached no
// actor, as transport exports them (spi's types, MonitorID their ID).
type (
	linkSignal         = spi.LinkSignal
	unlinkSignal       = spi.UnlinkSignal
	exitSignal         = spi.ExitSignal
	monitorSignal      = spi.MonitorSignal[MonitorID]
	demonitorSignal    = spi.DemonitorSignal[MonitorID]
	downSignal         = spi.DownSignal[MonitorID]
	undeliverableReply = spi.Undeliverable[Ref]
)

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
	c.flushRun()
	c.sys.send(ref, c.Self(), linkSignal{}, 0, kindSignal)
}

// Unlink removes the link to ref, in both directions.
func (c *Context) Unlink(ref Ref) {
	if c.ext != nil {
		delete(c.ext.links, ref)
	}
	c.trackRemote(edgeLink, ref, 0, false)
	c.flushRun()
	c.sys.send(ref, c.Self(), unlinkSignal{}, 0, kindSignal)
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
	c.flushRun()
	c.sys.send(ref, c.Self(), monitorSignal{ID: id}, 0, kindSignal)
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
	c.flushRun()
	c.sys.send(ref, c.Self(), demonitorSignal{ID: id}, 0, kindSignal)
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
	case linkSignal:
		if c.isRemote(n.from) && c.opts&oAcceptRemoteLinks == 0 && !c.linkedTo(n.from) {
			c.flushRun()
			c.sys.send(n.from, c.Self(), exitSignal{Reason: ErrLinkRefused, Linked: true}, 0, kindSignal)
			return false
		}
		if !c.admitRemote(edgeLink, n.from, 0) {
			c.flushRun()
			c.sys.send(n.from, c.Self(), exitSignal{Reason: ErrSystemLimit, Linked: true}, 0, kindSignal)
			return false
		}
		e := c.extra()
		if e.links == nil {
			e.links = make(map[Ref]struct{})
		}
		e.links[n.from] = struct{}{}
	case unlinkSignal:
		if c.ext != nil {
			delete(c.ext.links, n.from)
		}
		c.trackRemote(edgeLink, n.from, 0, false)
	case monitorSignal:
		if !c.admitRemote(edgeWatcher, n.from, s.ID) {
			c.flushRun()
			c.sys.send(n.from, c.Self(), downSignal{ID: s.ID, Reason: ErrSystemLimit}, 0, kindSignal)
			return false
		}
		e := c.extra()
		if e.watchers == nil {
			e.watchers = make(map[monitorEdge]struct{})
		}
		e.watchers[monitorEdge{s.ID, n.from}] = struct{}{}
	case demonitorSignal:
		if c.ext != nil {
			delete(c.ext.watchers, monitorEdge{s.ID, n.from})
		}
		c.trackRemote(edgeWatcher, n.from, s.ID, false)
	case downSignal:
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
	case exitSignal:
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
