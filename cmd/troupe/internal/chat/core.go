package chat

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// The chat: each user is an actor "chat-<nick>" on its peer; a room is the
// group "chat-<room>"; a line said in a room is broadcast to the group; /msg
// sends a Direct to the other user's actor. Presence (Joined / Left)
// comes from the groups, and a peer's departure turns its users into Left.

// Line is a line said in a room.
type Line struct {
	Room, Nick, Text string
}

// Direct is a private message to one user.
type Direct struct {
	Nick, Text string
}

// Rename tells a room that a user changed nick.
type Rename struct {
	Room, Old, New string
}

func Register(reg *codec.Registry) {
	codec.MustRegister[Line](reg, "troupe.chat.Line")
	codec.MustRegister[Direct](reg, "troupe.chat.Direct")
	codec.MustRegister[Rename](reg, "troupe.chat.Rename")
	codec.MustRegister[HistoryAsk](reg, "troupe.chat.HistoryAsk")
	codec.MustRegister[History](reg, "troupe.chat.History")
}

// Commands lists the chat's slash commands, for -h and /help.
const Commands = "/msg NICK text, /who, /rooms, /join ROOM, /nick NEW, /stats, /help, /quit"

const (
	chatActorPrefix = "chat-"
	chatGroupPrefix = "chat-"
	maxChatLine     = cli.MaxLine
)

// CheckName checks a nick or room name: 1–24 of a-z, A-Z, 0-9, '_', '-'.
func CheckName(what, s string) error {
	if s == "" || len(s) > 24 {
		return fmt.Errorf("%s %q must be 1 to 24 characters", what, s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%s %q may hold only letters, digits, '_' and '-'", what, s)
		}
	}
	return nil
}

// fromNick reports whether the message being handled comes from the actor
// of nick: a peer cannot speak under another user's nick, and a nick that
// is not a valid one (a line break, escape codes) is never shown.
func fromNick(c *actor.Context, nick string) bool {
	return CheckName("nick", nick) == nil && c.Sender().Name() == chatActorPrefix+nick
}

// chatInput is a line the user typed, handed to the user's actor.
type chatInput struct{ line string }

// chatSession is one user's chat on a node. The user's actor owns the
// state; the session only carries lines in and out.
type chatSession struct {
	node  *peer.Node
	out   io.Writer // serialized
	cur   atomic.Value
	done  chan struct{}
	once  sync.Once
	nicks nickBook    // who owns which nick (see trust.go)
	limit lineLimiter // lines per peer
	now   func() time.Time
}

// clock is the time a line shown now carries.
func (s *chatSession) clock() string { t := s.now(); return chatTime(t, t) }

// chatState is the state of a user's actor, owned by its loop.
type chatState struct {
	s       *chatSession
	nick    string
	room    string
	members map[actor.Ref]string // the room's other members and their nicks
	// prev is the actor of the user's previous nick, which retires once
	// this one has joined the room (so the room never lacks the user and
	// the peer never leaves and re-joins the group).
	prev     actor.Ref
	prevNick string
	former   actor.Ref // the previous actor, never shown as a member
	said     saidLog   // the user's own lines, for late joiners
	// A late joiner's window (history.go): hist is nil when none is
	// open; histGen numbers the windows, histTimer sends historyDue.
	hist      *history
	histGen   int
	histTimer *time.Timer
}

// chatForwarded is a direct message that reached the user's previous actor
// (already checked there) from a user of peer, forwarded to the current one.
type chatForwarded struct {
	m    Direct
	peer string
}

// chatHandoff tells the actor of a user's previous nick to stop.
type chatHandoff struct{}

// Run runs a user's chat on node: it reads commands and lines from in
// and writes what happens to out, one line per event, until /quit, the end
// of in, or ctx ends; then, if ctx ended, it writes stopNote last, unless
// it is "".
func Run(ctx context.Context, node *peer.Node, nick, room, stopNote string, in io.Reader, out io.Writer) error {
	s := &chatSession{node: node, out: &cli.LockedWriter{W: out}, done: make(chan struct{}), limit: lineLimiter{now: time.Now}, now: time.Now}
	st := &chatState{s: s, nick: nick, room: room, members: map[actor.Ref]string{}}
	ref, err := st.spawn(node.System().Spawn, true)
	if err != nil {
		return err
	}
	s.cur.Store(ref)
	input := &inputReader{s: s, in: in, ended: make(chan struct{})}
	if _, err := node.System().SpawnThread("", input.run); err != nil {
		s.input("/quit")
		<-s.done
		return err
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		s.input("/quit")
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
		if stopNote != "" {
			s.printf("%s", stopNote)
		}
	}
	// The input's thread ends with the session where its read can be
	// interrupted (see input.go).
	input.interrupt()
	return nil
}

func (s *chatSession) input(line string) {
	s.node.System().Send(s.current(), chatInput{line})
}

// current is the user's current actor (a rename makes a new one).
func (s *chatSession) current() actor.Ref { return s.cur.Load().(actor.Ref) }

func (s *chatSession) printf(format string, args ...any) {
	fmt.Fprintf(s.out, format+"\n", args...)
}

func (s *chatSession) finish() { s.once.Do(func() { close(s.done) }) }
