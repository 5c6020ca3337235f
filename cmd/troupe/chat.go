package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/term"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// The chat: each user is an actor "chat-<nick>" on its peer; a room is the
// group "chat-<room>"; a line said in a room is broadcast to the group; /msg
// sends a ChatDirect to the other user's actor. Presence (Joined / Left)
// comes from the groups, and a peer's departure turns its users into Left.

// ChatLine is a line said in a room.
type ChatLine struct {
	Room, Nick, Text string
}

// ChatDirect is a private message to one user.
type ChatDirect struct {
	Nick, Text string
}

// ChatRename tells a room that a user changed nick.
type ChatRename struct {
	Room, Old, New string
}

func registerChat(reg *codec.Registry) {
	codec.MustRegister[ChatLine](reg, "troupe.chat.Line")
	codec.MustRegister[ChatDirect](reg, "troupe.chat.Direct")
	codec.MustRegister[ChatRename](reg, "troupe.chat.Rename")
}

const (
	chatActorPrefix = "chat-"
	chatGroupPrefix = "chat-"
	maxChatLine     = 16 << 10
)

// checkChatName checks a nick or room name: 1–24 of a-z, A-Z, 0-9, '_', '-'.
func checkChatName(what, s string) error {
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
	return checkChatName("nick", nick) == nil && c.Sender().Name() == chatActorPrefix+nick
}

// clean makes a text from another peer safe to print on one line: control
// characters (line breaks, terminal escape sequences, C1 codes) and bidi
// controls (which can reorder what a line shows) become spaces, and
// the text is cut at maxChatLine bytes.
func clean(text string) string {
	if len(text) > maxChatLine {
		text = strings.ToValidUTF8(text[:maxChatLine], "") + " …"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, text)
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
	nicks nickBook    // who owns which nick (see chat_trust.go)
	limit lineLimiter // lines per peer
}

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
}

// chatForwarded is a direct message that reached the user's previous actor
// (already checked there) from a user of peer, forwarded to the current one.
type chatForwarded struct {
	m    ChatDirect
	peer string
}

// chatHandoff tells the actor of a user's previous nick to stop.
type chatHandoff struct{}

// runChat runs a user's chat on node: it reads commands and lines from in
// and writes what happens to out, one line per event, until /quit, the end
// of in, or ctx ends; then, if ctx ended, it writes stopNote last, unless
// it is "".
func runChat(ctx context.Context, node *peer.Node, nick, room, stopNote string, in io.Reader, out io.Writer) error {
	s := &chatSession{node: node, out: &lockedWriter{w: out}, done: make(chan struct{}), limit: lineLimiter{now: time.Now}}
	st := &chatState{s: s, nick: nick, room: room, members: map[actor.Ref]string{}}
	ref, err := st.spawn(node.System().Spawn, true)
	if err != nil {
		return err
	}
	s.cur.Store(ref)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := bufio.NewReaderSize(in, 4096)
		for {
			line, err := readLimitedLine(r, maxChatLine)
			if errors.Is(err, errLineTooLong) {
				s.printf("! line longer than %d bytes, not sent", maxChatLine)
				continue
			}
			if len(line) > 0 {
				s.input(strings.TrimRight(string(line), "\r\n"))
			}
			if err != nil {
				break
			}
		}
		s.input("/quit")
	}()
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
	// A connection's reader is interrupted by closing it and waited for; a
	// read blocked on a terminal or pipe cannot be interrupted, and the
	// process exits after the session anyway.
	if c, ok := in.(net.Conn); ok {
		c.Close()
		wg.Wait()
	}
	return nil
}

func (s *chatSession) input(line string) {
	s.node.System().Send(s.cur.Load().(actor.Ref), chatInput{line})
}

func (s *chatSession) printf(format string, args ...any) {
	fmt.Fprintf(s.out, format+"\n", args...)
}

func (s *chatSession) finish() { s.once.Do(func() { close(s.done) }) }

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
	st.enter(c, st.room)
	if !st.prev.IsZero() {
		_ = c.Broadcast(chatGroupPrefix+st.room, ChatRename{Room: st.room, Old: st.prevNick, New: st.nick})
		c.Send(st.prev, chatHandoff{})
		st.former, st.prev = st.prev, actor.Ref{}
	}
	st.loop(c)
}

// enter joins room and makes it the current one.
func (st *chatState) enter(c *actor.Context, room string) {
	st.room, st.members = room, map[actor.Ref]string{}
	if err := c.Join(chatGroupPrefix+room, actor.WatchPresence()); err != nil {
		st.s.printf("! cannot join #%s: %v", room, err)
		return
	}
	st.s.printf("* joined #%s", room)
	st.checkCollision(c)
}

func (st *chatState) loop(c *actor.Context) {
	c.Receive(actor.Any(func(m any) {
		if st.handle(c, m) {
			st.loop(c)
		}
	}))
}

// handle handles one message and reports whether the actor goes on.
func (st *chatState) handle(c *actor.Context, m any) bool {
	group := chatGroupPrefix + st.room
	from := c.Sender().Peer()
	switch m := m.(type) {
	case chatInput:
		return st.command(c, m.line)
	case ChatLine:
		if m.Room == st.room && fromNick(c, m.Nick) && st.s.limit.allow(from) {
			st.s.printf("[#%s] <%s> %s", m.Room, st.s.nicks.show(m.Nick, from), clean(m.Text))
		}
	case ChatDirect:
		if fromNick(c, m.Nick) && st.s.limit.allow(from) {
			st.s.printf("[dm from %s] %s", st.s.nicks.show(m.Nick, from), clean(m.Text))
		}
	case chatForwarded:
		st.s.printf("[dm from %s] %s", st.s.nicks.show(m.m.Nick, m.peer), clean(m.m.Text))
	case ChatRename:
		// A rename by this user's own former actor is not news here.
		own := c.Sender() == st.prev || c.Sender() == st.former
		if m.Room == st.room && !own && fromNick(c, m.New) && checkChatName("nick", m.Old) == nil && st.s.limit.allow(from) {
			st.s.printf("* %s is now %s", st.s.nicks.show(m.Old, from), st.s.nicks.show(m.New, from))
		}
	case actor.Joined:
		nick, ok := strings.CutPrefix(m.Member.Name(), chatActorPrefix)
		if m.Group != group || !ok || checkChatName("nick", nick) != nil || m.Member == c.Self() || m.Member == st.prev || m.Member == st.former {
			break
		}
		if _, known := st.members[m.Member]; !known {
			st.members[m.Member] = nick
			st.s.printf("* %s joined #%s", st.s.nicks.show(nick, m.Member.Peer()), st.room)
		}
	case actor.Left:
		if nick, ok := st.members[m.Member]; ok && m.Group == group {
			delete(st.members, m.Member)
			st.s.printf("* %s left #%s", st.s.nicks.show(nick, m.Member.Peer()), st.room)
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
		if err := c.Broadcast(chatGroupPrefix+st.room, ChatLine{Room: st.room, Nick: st.nick, Text: line}); err != nil {
			st.s.printf("! not sent: %v", err)
		}
		return true
	}
	cmd, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "/quit":
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
		to, ok := st.find(nick)
		if !ok {
			st.s.printf("! no user %s is known; /who lists the room", nick)
			break
		}
		c.Send(to, ChatDirect{Nick: st.nick, Text: text})
		st.s.printf("[dm to %s] %s", nick, text)
	case "/join":
		if err := checkChatName("room", rest); err != nil {
			st.s.printf("! %v", err)
			break
		}
		if rest != st.room {
			c.Leave(chatGroupPrefix + st.room)
			st.s.printf("* left #%s", st.room)
			st.enter(c, rest)
		}
	case "/nick":
		if err := checkChatName("nick", rest); err != nil {
			st.s.printf("! %v", err)
			break
		}
		if rest != st.nick {
			return st.rename(c, rest)
		}
	case "/stats":
		st.s.printf("* %d lines dropped from peers sending over %d a second", st.s.limit.dropped.Load(), lineRate)
	case "/help":
		st.s.printf("* commands: /msg NICK text, /who, /rooms, /join ROOM, /nick NEW, /stats, /quit")
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
		case ChatDirect:
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

// find returns the actor of a user, named as show names it (nick, or
// nick@<peer's last 6>): a member of the room, else the local actor or one
// the directory knows; a plain nick means its owner's.
func (st *chatState) find(shown string) (actor.Ref, bool) {
	nick, tail := splitShown(shown)
	match := func(ref actor.Ref) bool {
		if tail != "" {
			return strings.HasSuffix(ref.Peer(), tail)
		}
		return st.s.nicks.owns(nick, ref.Peer())
	}
	for ref, n := range st.members {
		if n == nick && match(ref) {
			return ref, true
		}
	}
	if ref, ok := st.s.node.System().Whereis(chatActorPrefix + nick); ok && (tail == "" || match(ref)) {
		return ref, true
	}
	for _, ref := range st.s.node.Directory().Lookup(chatActorPrefix + nick) {
		if match(ref) || tail == "" {
			return ref, true
		}
	}
	return actor.Ref{}, false
}

// rooms lists the rooms this peer and the advertisements know, with the
// number of peers that have members in each.
func (st *chatState) rooms() []string {
	count := map[string]int{}
	for _, g := range st.s.node.System().Groups() {
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
		out = append(out, fmt.Sprintf("#%s (%d %s)", clean(r), n, plural(n, "peer"))) // advertised by peers
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

// chat is the daemon side of 'troupe chat': the user's actor runs in the
// daemon and the control connection carries the lines.
func (d *runningDaemon) chat(ctx context.Context, req request, conn net.Conn) (any, func(), error) {
	if err := checkChatName("nick", req.Nick); err != nil {
		return nil, nil, err
	}
	if err := checkChatName("room", req.Room); err != nil {
		return nil, nil, err
	}
	return struct{}{}, func() { _ = runChat(ctx, d.node, req.Nick, req.Room, daemonStopNote, conn, conn) }, nil
}

// chatCmd runs 'troupe chat': through the daemon of the home when one
// runs, else on a peer of its own (embedded) with the home's identity and
// configuration.
func chatCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("chat", "", "the LAN chat: peers of the mesh find each other with no configuration; a room is a group; type a line to say it, or /msg NICK text, /who, /rooms, /join ROOM, /nick NEW, /quit", stderr)
	homeDir := homeFlag(fs)
	nick := fs.String("nick", "", "your nick (required): letters, digits, '_', '-'")
	room := fs.String("room", "lobby", "the room to join")
	plain := fs.Bool("plain", false, "line mode even on a terminal (the default when stdin or stdout is not a terminal)")
	var connect listFlag
	fs.Var(&connect, "connect", "multiaddr with /p2p/ of a peer to connect to (repeatable; embedded peer only)")
	if _, ok, code := parseArgs(fs, args, 0, 0); !ok {
		return code
	}
	if err := checkChatName("nick", *nick); err != nil {
		return fail(stderr, "chat", fmt.Errorf("%w: -nick: %w", errUsage, err))
	}
	if err := checkChatName("room", *room); err != nil {
		return fail(stderr, "chat", fmt.Errorf("%w: -room: %w", errUsage, err))
	}
	var peers []libp2ppeer.AddrInfo
	for _, s := range connect {
		ai, err := parsePeerAddr(s)
		if err != nil {
			return fail(stderr, "chat", fmt.Errorf("%w: -connect: %w", errUsage, err))
		}
		peers = append(peers, ai)
	}
	ctx, stop := signalContext()
	defer stop()
	tui := !*plain && isTerminal(stdin) && isTerminal(stdout)
	// session runs the chat with the given input and output until it ends.
	var session func(in io.Reader, out io.Writer) error
	h := home(*homeDir)
	conn, err := call(ctx, h, request{Cmd: "chat", Nick: *nick, Room: *room}, nil, true)
	switch {
	case err == nil:
		session = func(in io.Reader, out io.Writer) error { return chatThroughDaemon(ctx, conn, in, out) }
	case !errors.Is(err, errNoDaemon):
		return fail(stderr, "chat", err)
	default:
		cfg, unlock, err := h.open()
		if err != nil {
			return fail(stderr, "chat", err)
		}
		defer unlock()
		logs := stderr
		if tui {
			// Log lines would tear the full-screen UI: they go to a file.
			f, err := os.OpenFile(h.path("chat.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return fail(stderr, "chat", err)
			}
			defer f.Close()
			logs = f
		}
		d, err := startDaemon(ctx, h, cfg, logs, io.Discard, true)
		if err != nil {
			return fail(stderr, "chat", err)
		}
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.close(closeCtx); err != nil {
				fmt.Fprintln(stderr, "troupe chat:", err)
			}
		}()
		session = func(in io.Reader, out io.Writer) error {
			fmt.Fprintf(out, "* peer %s, mesh %s (no daemon on %s: running a peer of our own)\n", d.node.ID(), cfg.Mesh, h)
			for _, ai := range peers {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				if err := d.node.Connect(cctx, ai); err != nil {
					fmt.Fprintf(out, "! connecting to %s: %v\n", ai.ID, err)
				}
				cancel()
			}
			return runChat(ctx, d.node, *nick, *room, "", in, out)
		}
	}
	if tui {
		var serr error
		if err := runTUI(*nick, *room, stdin, stdout, func(in io.Reader, out io.Writer) { serr = session(in, out) }); err != nil {
			return fail(stderr, "chat", err)
		}
		err = serr
	} else {
		err = session(stdin, stdout)
	}
	if err != nil {
		return fail(stderr, "chat", err)
	}
	return 0
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// daemonStopNote is the last line of a chat session that the daemon
// ended because it is stopping.
const daemonStopNote = "! the daemon is stopping"

// errDaemonGone reports a chat session through a daemon that the daemon
// ended (it stopped, or died), not the user: its last line is not "* bye".
var errDaemonGone = errors.New("the daemon ended the chat")

// chatThroughDaemon copies the user's lines to the daemon's chat session
// and the session's lines to out until the session ends, and returns
// errDaemonGone if the daemon ended it rather than the user.
func chatThroughDaemon(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error {
	defer conn.Close()
	// SIGINT / SIGTERM: leave the chat as /quit does.
	stop := context.AfterFunc(ctx, func() { _, _ = io.WriteString(conn, "/quit\n") })
	defer stop()
	go func() {
		// Ends with the input or when the session closes the connection;
		// a read blocked on a terminal cannot be interrupted, and the
		// process exits right after the session.
		_, _ = io.Copy(conn, in)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	tail := &lastLine{w: out}
	_, _ = io.Copy(tail, conn)
	if !bytes.Equal(bytes.TrimSpace(tail.line), []byte("* bye")) {
		return errDaemonGone
	}
	return nil
}

// lastLine writes to w and keeps the end of what it wrote: its last line,
// or the last 64 bytes of it.
type lastLine struct {
	w    io.Writer
	line []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if k := len(l.line); k > 0 && l.line[k-1] == '\n' {
		l.line = l.line[:0] // that line ended: a new one starts
	}
	if i := bytes.LastIndexByte(bytes.TrimRight(p[:n], "\n"), '\n'); i >= 0 {
		l.line = append(l.line[:0], p[i+1:n]...)
	} else {
		l.line = append(l.line, p[:n]...)
	}
	if len(l.line) > 64 {
		l.line = append(l.line[:0], l.line[len(l.line)-64:]...)
	}
	return n, err
}
