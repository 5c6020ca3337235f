package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/muesli/cancelreader"
	"golang.org/x/term"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/chat"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/daemon"
)

// chatCmd runs 'troupe chat': through the daemon of the home when one
// runs, else on a peer of its own (embedded) with the home's identity and
// configuration.
func chatCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("chat", "", "the LAN chat: peers of the mesh find each other with no configuration; a room is a group; type a line to say it, or "+chat.Commands+"; on joining a room you see the last lines of the users present, marked as history", stderr)
	homeDir := cli.HomeFlag(fs)
	nick := fs.String("nick", "", "your nick (required): letters, digits, '_', '-'")
	room := fs.String("room", "lobby", "the room to join")
	plain := fs.Bool("plain", false, "line mode even on a terminal (the default when stdin or stdout is not a terminal)")
	var connect cli.ListFlag
	fs.Var(&connect, "connect", "multiaddr with /p2p/ of a peer to connect to (repeatable; embedded peer only)")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	if err := chat.CheckName("nick", *nick); err != nil {
		return cli.Fail(stderr, "chat", fmt.Errorf("%w: -nick: %w", config.ErrUsage, err))
	}
	if err := chat.CheckName("room", *room); err != nil {
		return cli.Fail(stderr, "chat", fmt.Errorf("%w: -room: %w", config.ErrUsage, err))
	}
	var peers []libp2ppeer.AddrInfo
	for _, s := range connect {
		ai, err := config.ParsePeerAddr(s)
		if err != nil {
			return cli.Fail(stderr, "chat", fmt.Errorf("%w: -connect: %w", config.ErrUsage, err))
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
		session = func(in io.Reader, out io.Writer) error {
			in, release := cancelable(in)
			defer release()
			return chat.ThroughDaemon(ctx, conn, in, out)
		}
	case !errors.Is(err, control.ErrNoDaemon):
		return cli.Fail(stderr, "chat", err)
	default:
		if _, err := h.Ensure(); err != nil { // chat.log lives in it
			return cli.Fail(stderr, "chat", err)
		}
		logs := stderr
		if tui {
			// Log lines would tear the full-screen UI: they go to a file.
			f, err := os.OpenFile(h.Path("chat.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return cli.Fail(stderr, "chat", err)
			}
			defer f.Close()
			logs = f
		}
		d, err := daemon.Open(ctx, h, nil, daemon.Options{Logs: logs, Out: io.Discard, EmbeddedChat: true, Version: buildVersion()})
		if err != nil {
			return cli.Fail(stderr, "chat", err)
		}
		cfg := d.Config()
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.Close(closeCtx); err != nil {
				fmt.Fprintln(stderr, "troupe chat:", err)
			}
		}()
		session = func(in io.Reader, out io.Writer) error {
			fmt.Fprintf(out, "* peer %s, mesh %s (no daemon on %s: running a peer of our own)\n", d.Node().ID(), cfg.Mesh, h)
			for _, ai := range peers {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				if err := d.Node().Connect(cctx, ai); err != nil {
					fmt.Fprintf(out, "! connecting to %s: %v\n", ai.ID, err)
				}
				cancel()
			}
			in, release := cancelable(in)
			defer release()
			return chat.Run(ctx, d.Node(), *nick, *room, "", in, out)
		}
	}
	if tui {
		var serr error
		if err := chat.RunTUI(*nick, *room, stdin, stdout, func(in io.Reader, out io.Writer) { serr = session(in, out) }); err != nil {
			return cli.Fail(stderr, "chat", err)
		}
		err = serr
	} else {
		err = session(stdin, stdout)
	}
	if err != nil {
		return cli.Fail(stderr, "chat", err)
	}
	return 0
}

// cancelable returns in, or for a terminal or pipe a reader of it whose
// blocked read the session's end can cancel (chat.Canceler): else the
// chat's input thread, blocked in that read after a SIGINT, would hold up
// the peer's shutdown (and a chat through the daemon would leave a read
// of the terminal behind). A regular file's reads end by themselves, and
// cancelreader, which epoll refuses it, would leak its pipe's two fds.
func cancelable(in io.Reader) (io.Reader, func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().IsRegular() {
		return in, func() {}
	}
	cr, err := cancelreader.NewReader(f)
	if err != nil {
		return in, func() {}
	}
	return cr, func() { _ = cr.Close() }
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
