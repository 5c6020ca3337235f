package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// A chat session's state: the user's actor, the room, and what each
// input line and each message from the room does.

// spawn starts the user's actor under st.nick; when the name is taken on
// this peer it tries nick2, nick3 … (announcing the change when announce).
func (st *chatState) spawn(spawn func(string, actor.Behavior, ...actor.SpawnOption) (actor.Ref, error), announce bool) (actor.Ref, error) {
	base := st.nick
	for i := 1; i < 100; i++ {
		nick := base
		if i > 1 {
			nick = fmt.Sprintf("%s%d", base, i)
		}
		next := &chatState{s: st.s, nick: nick, room: st.room, prev: st.prev, prevNick: st.prevNick}
		ref, err := spawn(chatActorPrefix+nick, next.start)
		if errors.Is(err, actor.ErrNameTaken) {
			continue
		}
		if err != nil {
			return actor.Ref{}, err
		}
		if nick != base && announce {
			st.s.printf("* nick %s is taken on this peer; you are %s", base, nick)
		}
		return ref, nil
	}
	return actor.Ref{}, fmt.Errorf("nick %s and its variants are taken on this peer", base)
}

func (st *chatState) start(c *actor.Context) {
	st.s.cur.Store(c.Self())
	st.s.nicks.bind(st.nick, c.Self().Peer())
	st.s.printf("* you are %s (%s)", st.nick, c.Self())
	st.enter(c, st.room, st.prev.IsZero()) // a rename has seen the history
	if !st.prev.IsZero() {
		_ = group.Broadcast(c, chatGroupPrefix+st.room, Rename{Room: st.room, Old: st.prevNick, New: st.nick})
		c.Send(st.prev, chatHandoff{})
		st.former, st.prev = st.prev, actor.Ref{}
	}
	st.loop(c)
}

// enter joins room and makes it the current one; with history, it asks
// the room's members for their recent lines (see history.go).
func (st *chatState) enter(c *actor.Context, room string, history bool) {
	st.room, st.members = room, map[actor.Ref]string{}
	if err := group.Join(c, chatGroupPrefix+room, group.WatchPresence()); err != nil {
		st.s.printf("! cannot join #%s: %v", room, err)
		return
	}
	st.s.printf("* joined #%s", room)
	st.checkCollision(c)
	if history {
		st.openHistory(c)
	}
}

// loop installs the actor's one state, its cases built once and
// installed again after each message while the actor goes on.
func (st *chatState) loop(c *actor.Context) {
	var chatting actor.Case
	chatting = actor.Cases(actor.Any(func(m any) {
		if st.handle(c, m) {
			c.Receive(chatting)
		}
	}))
	c.Receive(chatting)
}

// handle handles one message and reports whether the actor goes on.
func (st *chatState) handle(c *actor.Context, m any) bool {
	room := chatGroupPrefix + st.room
	from := c.Sender().Peer()
	switch m := m.(type) {
	case chatInput:
		return st.command(c, m.line)
	case Line:
		if m.Room == st.room && fromNick(c, m.Nick) && st.s.limit.allow(from) {
			st.s.printf("%s [#%s] <%s> %s", st.s.clock(), m.Room, st.s.nicks.show(m.Nick, from), cli.Clean(m.Text))
		}
	case Direct:
		if fromNick(c, m.Nick) && st.s.limit.allow(from) {
			st.s.printf("%s [dm from %s] %s", st.s.clock(), st.s.nicks.label(m.Nick, from), cli.Clean(m.Text))
		}
	case chatForwarded:
		st.s.printf("%s [dm from %s] %s", st.s.clock(), st.s.nicks.label(m.m.Nick, m.peer), cli.Clean(m.m.Text))
	case HistoryAsk:
		if m.Room == st.room && !st.own(c, c.Sender()) && st.s.limit.allow(from) {
			c.Send(c.Sender(), History{Room: st.room, Lines: st.said.of(st.room)})
		}
	case History:
		st.takeHistory(c, m)
	case historyDue:
		if h := st.hist; h != nil && c.Sender().IsZero() && m.gen == h.gen && !st.s.now().Before(h.deadline) {
			st.closeHistory()
		}
	case Rename:
		// A rename by this user's own former actor is not news here.
		own := c.Sender() == st.prev || c.Sender() == st.former
		if m.Room == st.room && !own && fromNick(c, m.New) && CheckName("nick", m.Old) == nil && st.s.limit.allow(from) {
			st.s.printf("* %s is now %s", st.s.nicks.show(m.Old, from), st.s.nicks.show(m.New, from))
		}
	case group.Joined:
		nick, ok := strings.CutPrefix(m.Member.Name(), chatActorPrefix)
		if m.Group != room || !ok || CheckName("nick", nick) != nil || m.Member == c.Self() || m.Member == st.prev || m.Member == st.former {
			break
		}
		if _, known := st.members[m.Member]; !known {
			st.members[m.Member] = nick
			st.s.printf("* %s joined #%s", st.s.nicks.show(nick, m.Member.Peer()), st.room)
		}
		if st.hist != nil && st.hist.ask(m.Member, st.s.now()) {
			c.Send(m.Member, HistoryAsk{Room: st.room})
			st.armHistory(c)
		}
	case group.Left:
		if nick, ok := st.members[m.Member]; ok && m.Group == room {
			delete(st.members, m.Member)
			st.s.printf("* %s left #%s", st.s.nicks.label(nick, m.Member.Peer()), st.room)
		}
	}
	return true
}

// command runs a line typed by the user and reports whether the actor goes
// on.
func (st *chatState) command(c *actor.Context, line string) bool {
	line = strings.TrimSpace(line)
	if line == "" {
		return true
	}
	if !strings.HasPrefix(line, "/") {
		// The time is taken before the line goes: a member that answers
		// it says its answer later, and a late joiner's history, sorted
		// by time, must show them in that order.
		at := st.s.now()
		if err := group.Broadcast(c, chatGroupPrefix+st.room, Line{Room: st.room, Nick: st.nick, Text: line}); err != nil {
			st.s.printf("! not sent: %v", err)
		} else {
			st.said.add(st.room, line, at)
		}
		return true
	}
	cmd, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "/quit":
		st.stopHistory()
		st.s.printf("* bye")
		st.s.finish()
		c.Stop()
		return false
	case "/who":
		nicks := []string{st.nick + " (you)"}
		for ref, n := range st.members {
			nicks = append(nicks, st.s.nicks.show(n, ref.Peer()))
		}
		slices.Sort(nicks[1:])
		st.s.printf("* in #%s: %s", st.room, strings.Join(nicks, ", "))
	case "/rooms":
		st.s.printf("* rooms: %s", strings.Join(st.rooms(), ", "))
	case "/msg":
		nick, text, _ := strings.Cut(rest, " ")
		text = strings.TrimSpace(text)
		if nick == "" || text == "" {
			st.s.printf("! usage: /msg NICK text")
			break
		}
		name, _ := splitShown(nick)
		to, shown, err := resolveNick(&st.s.nicks, nick, st.candidates(name))
		if err != nil {
			st.s.printf("! not sent: %v", err)
			break
		}
		c.Send(to, Direct{Nick: st.nick, Text: text})
		st.s.printf("%s [dm to %s] %s", st.s.clock(), shown, text)
	case "/join":
		if err := CheckName("room", rest); err != nil {
			st.s.printf("! %v", err)
			break
		}
		if rest != st.room {
			group.Leave(c, chatGroupPrefix+st.room)
			st.s.printf("* left #%s", st.room)
			st.stopHistory()
			st.enter(c, rest, true)
		}
	case "/nick":
		if err := CheckName("nick", rest); err != nil {
			st.s.printf("! %v", err)
			break
		}
		if rest != st.nick {
			return st.rename(c, rest)
		}
	case "/stats":
		st.s.printf("* %d lines dropped from peers sending over %d a second", st.s.limit.dropped.Load(), lineRate)
	case "/help":
		st.s.printf("* commands: %s", Commands)
	default:
		st.s.printf("! unknown command %s; /help lists them", cmd)
	}
	return true
}

// rename moves the user to a new actor "chat-<nick>" (an actor's name is
// fixed). The new actor joins the room, tells it of the rename and sends
// this one a hand-off; until then this one forwards what the user types.
// The room sees the new nick join, the rename, and the old nick leave.
func (st *chatState) rename(c *actor.Context, nick string) bool {
	if st.hist != nil {
		st.closeHistory() // what came so far: the new actor asks no more
	}
	next := &chatState{s: st.s, nick: nick, room: st.room, prev: c.Self(), prevNick: st.nick}
	ref, err := next.spawn(c.Spawn, true)
	if err != nil {
		st.s.printf("! cannot become %s: %v", nick, err)
		return true
	}
	st.s.cur.Store(ref)
	var retire actor.Case
	retire = actor.Any(func(m any) {
		switch m := m.(type) {
		case chatHandoff:
			c.Stop()
		case chatInput:
			c.Send(ref, m)
			c.ReceiveWithin(5*time.Second, retire, actor.Timeout(c.Stop))
		case Direct:
			if fromNick(c, m.Nick) {
				c.Send(ref, chatForwarded{m, c.Sender().Peer()})
			}
			c.ReceiveWithin(5*time.Second, retire, actor.Timeout(c.Stop))
		default:
			c.ReceiveWithin(5*time.Second, retire, actor.Timeout(c.Stop))
		}
	})
	c.ReceiveWithin(5*time.Second, retire, actor.Timeout(c.Stop))
	return false
}

// checkCollision tells the user when a user of another peer has this nick
// too (the directory knows it): that user is shown with its peer.
func (st *chatState) checkCollision(c *actor.Context) {
	for _, ref := range st.s.node.Directory().Lookup(chatActorPrefix + st.nick) {
		if ref.Peer() != c.Self().Peer() {
			st.s.printf("* nick %s is also used on %s, shown as %s@%s", st.nick, peerTail(ref.Peer()), st.nick, peerTail(ref.Peer()))
			break
		}
	}
}

// candidates returns the users named chat-<nick> that this user knows
// of: the room's members, this peer's actor and the ones the directory
// knows, each once. resolveNick picks among them.
func (st *chatState) candidates(nick string) []actor.Ref {
	var out []actor.Ref
	add := func(ref actor.Ref) {
		if !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	for ref, n := range st.members {
		if n == nick {
			add(ref)
		}
	}
	if ref, ok := st.s.node.System().Whereis(chatActorPrefix + nick); ok {
		add(ref)
	}
	for _, ref := range st.s.node.Directory().Lookup(chatActorPrefix + nick) {
		add(ref)
	}
	return out
}

// rooms lists the rooms this peer and the advertisements know, with the
// number of peers that have members in each.
func (st *chatState) rooms() []string {
	count := map[string]int{}
	for _, g := range group.Names(st.s.node.System()) {
		if r, ok := strings.CutPrefix(g, chatGroupPrefix); ok {
			count[r]++
		}
	}
	for _, ad := range st.s.node.Directory().Peers() {
		for _, g := range ad.Groups {
			if r, ok := strings.CutPrefix(g, chatGroupPrefix); ok {
				count[r]++
			}
		}
	}
	out := make([]string, 0, len(count))
	for r, n := range count {
		out = append(out, fmt.Sprintf("#%s (%d %s)", cli.Clean(r), n, plural(n, "peer"))) // advertised by peers
	}
	slices.Sort(out)
	return out
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}
