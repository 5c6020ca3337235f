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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/term"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/chat"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
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
	codec.MustRegister[ChatHistoryAsk](reg, "troupe.chat.HistoryAsk")
	codec.MustRegister[ChatHistory](reg, "troupe.chat.History")
}

// chatCommands lists the chat's slash commands, for -h and /help.
const chatCommands = "/msg NICK text, /who, /rooms, /join ROOM, /nick NEW, /stats, /help, /quit"

const (
	chatActorPrefix = "chat-"
	chatGroupPrefix = "chat-"
	maxChatLine     = cli.MaxLine
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
	// A late joiner's window (chat_history.go): hist is nil when none is
	// open; histGen numbers the windows, histTimer sends historyDue.
	hist      *history
	histGen   int
	histTimer *time.Timer
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
	s := &chatSession{node: node, out: &lockedWriter{w: out}, done: make(chan struct{}), limit: lineLimiter{now: time.Now}, now: time.Now}
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
			line, err := control.ReadLimitedLine(r, maxChatLine)
			if errors.Is(err, control.ErrLineTooLong) {
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

// chat is the daemon side of 'troupe chat': the user's actor runs in the
// daemon and the control connection carries the lines.
func (d *runningDaemon) chat(ctx context.Context, req control.Request, conn net.Conn) (any, func(), error) {
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
	fs := newFlagSet("chat", "", "the LAN chat: peers of the mesh find each other with no configuration; a room is a group; type a line to say it, or "+chatCommands+"; on joining a room you see the last lines of the users present, marked as history", stderr)
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
		ai, err := config.ParsePeerAddr(s)
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
	h := cli.Home(*homeDir)
	conn, err := control.Call(ctx, h, control.Request{Cmd: "chat", Nick: *nick, Room: *room}, nil, true)
	switch {
	case err == nil:
		session = func(in io.Reader, out io.Writer) error { return chatThroughDaemon(ctx, conn, in, out) }
	case !errors.Is(err, control.ErrNoDaemon):
		return fail(stderr, "chat", err)
	default:
		cfg, unlock, err := h.Open()
		if err != nil {
			return fail(stderr, "chat", err)
		}
		defer unlock()
		logs := stderr
		if tui {
			// Log lines would tear the full-screen UI: they go to a file.
			f, err := os.OpenFile(h.Path("chat.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
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
		if err := chat.RunTUI(*nick, *room, stdin, stdout, func(in io.Reader, out io.Writer) { serr = session(in, out) }); err != nil {
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
