package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// Watch mirrors the daemon's watcher request (registered as "troupe.Watch").
type Watch struct{ Ref string }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// troupeBinary builds cmd/troupe once per test run.
func troupeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "troupe-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "troupe")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "../cmd/troupe")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// loopbackConfig is a config.json that keeps a peer on 127.0.0.1 without
// mDNS.
const loopbackConfig = `{"listen": ["/ip4/127.0.0.1/tcp/0"], "mdns": false, "log_level": "warn"}`

// daemonProc is a running `troupe daemon`.
type daemonProc struct {
	cmd     *exec.Cmd
	home    string // its TROUPE_HOME
	metrics string // its metrics URL, when it serves them
	ui      string // its mesh view's URL, when it serves it
	id      libp2ppeer.ID
	addr    ma.Multiaddr   // the first listen address
	addrs   []ma.Multiaddr // all of them
	lines   chan string    // stdout lines after "ready", and joined/left lines
	seen    []string       // lines read by expectLine that matched nothing yet
}

// startDaemon starts `troupe daemon` on 127.0.0.1 without mDNS.
func startDaemon(t *testing.T, connect ...ma.Multiaddr) *daemonProc {
	t.Helper()
	args := []string{"-listen", "/ip4/127.0.0.1/tcp/0", "-mdns=false"}
	for _, c := range connect {
		args = append(args, "-connect", c.String())
	}
	return startDaemonIn(t, "", args...)
}

// startDaemonIn starts `troupe daemon` with args, inside network namespace
// ns unless ns is "".
func startDaemonIn(t *testing.T, ns string, args ...string) *daemonProc {
	t.Helper()
	return startDaemonHome(t, t.TempDir(), ns, args...)
}

// startDaemonHome starts `troupe daemon` with args on home, inside network
// namespace ns unless ns is "".
func startDaemonHome(t *testing.T, home, ns string, args ...string) *daemonProc {
	t.Helper()
	return startDaemonLogged(t, home, ns, os.Stderr, args...)
}

// startDaemonLogged is startDaemonHome with the daemon's stderr (its
// log) going to stderr.
func startDaemonLogged(t *testing.T, home, ns string, stderr io.Writer, args ...string) *daemonProc {
	t.Helper()
	if ns == "" {
		// Outside a namespace the home's own config keeps to 127.0.0.1
		// without mDNS too, for whatever else uses the home (a chat).
		cfg := filepath.Join(home, "config.json")
		if _, err := os.Stat(cfg); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(cfg, []byte(loopbackConfig), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	argv := append([]string{troupeBinary(t), "daemon", "-home", home, "-log-level", "warn"}, args...)
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	dieWithTest(cmd)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, home: home, lines: make(chan string, 100)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		isReady := false
		for sc.Scan() {
			line := sc.Text()
			if isReady {
				d.lines <- line
				continue
			}
			if strings.HasPrefix(line, "joined ") || strings.HasPrefix(line, "left ") {
				d.lines <- line // peers may join before the banner ends
				continue
			}
			switch f := strings.Fields(line); {
			case len(f) == 2 && f[0] == "peer":
				id, err := libp2ppeer.Decode(f[1])
				if err != nil {
					ready <- err
					return
				}
				d.id = id
			case len(f) == 2 && f[0] == "listen":
				a, err := ma.NewMultiaddr(f[1])
				if err != nil {
					ready <- err
					return
				}
				if d.addr == nil {
					d.addr = a
				}
				d.addrs = append(d.addrs, a)
			case len(f) == 2 && f[0] == "metrics":
				d.metrics = f[1]
			case len(f) == 2 && f[0] == "ui":
				d.ui = f[1]
			case line == "ready":
				isReady = true
				ready <- nil
			}
		}
		close(d.lines)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not get ready")
	}
	return d
}

// expectLine waits for a stdout line containing all of want, in any order
// relative to other expected lines: lines that match nothing yet are kept.
func (d *daemonProc) expectLine(t *testing.T, within time.Duration, want ...string) string {
	t.Helper()
	matches := func(line string) bool {
		for _, w := range want {
			if !strings.Contains(line, w) {
				return false
			}
		}
		return true
	}
	for i, line := range d.seen {
		if matches(line) {
			d.seen = append(d.seen[:i], d.seen[i+1:]...)
			return line
		}
	}
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-d.lines:
			if !ok {
				t.Fatalf("daemon exited while waiting for %q", want)
			}
			if matches(line) {
				return line
			}
			d.seen = append(d.seen, line)
		case <-deadline:
			t.Fatalf("no line with %q within %v; other lines: %q", want, within, d.seen)
		}
	}
}

func TestThreeDaemonsAndSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the troupe binary")
	}
	d1 := startDaemon(t)
	d2 := startDaemon(t, d1.addr)
	d3 := startDaemon(t, d1.addr, d2.addr)
	// The daemons talk among themselves: each asks the echo actor of
	// every peer that connects to it and prints the answer's round trip.
	daemons := []*daemonProc{d1, d2, d3}
	for _, d := range daemons {
		for _, o := range daemons {
			if o == d {
				continue
			}
			line := d.expectLine(t, 10*time.Second, "joined "+o.id.String()+" (echo")
			if strings.Contains(line, "failed") {
				t.Fatalf("daemon %v asking %v's echo: %q", d.id, o.id, line)
			}
		}
	}

	reg := registry(t)
	codec.MustRegister[Watch](reg, "troupe.Watch")
	me := newNode(t, peer.WithRegistry(reg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range []*daemonProc{d1, d2, d3} {
		ai, err := libp2ppeer.AddrInfoFromP2pAddr(d.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := me.Connect(ctx, *ai); err != nil {
			t.Fatal(err)
		}
		echo, _ := peer.Ref(d.id, "echo")
		if v, err := me.System().Ask(ctx, echo, Ping{42}); err != nil || v != (Ping{42}) {
			t.Fatalf("echo on %v: %v %v", d.id, v, err)
		}
	}
	// d2 and d3 monitor d1's echo: that traffic runs between the daemons.
	target, _ := peer.Ref(d1.id, "echo")
	// A watcher takes requests from its own peer only: through the CLI.
	for _, d := range []*daemonProc{d2, d3} {
		w, _ := peer.Ref(d.id, "watcher")
		if v, err := me.System().Ask(ctx, w, Watch{Ref: target.String()}); err != nil || v != false {
			t.Fatalf("a watch from another peer: %v, %v; want false", v, err)
		}
		cliOK(t, d.home, "ask", w.String(), fmt.Sprintf(`{"Ref":%q}`, target.String()), "--type", "troupe.Watch")
		d.expectLine(t, 5*time.Second, "watching", target.String())
	}
	for _, d := range []*daemonProc{d2, d3} {
		for _, line := range d.seen {
			if strings.HasPrefix(line, "down ") {
				t.Fatalf("daemon %v printed %q before the kill", d.id, line)
			}
		}
	}
	// Each watcher registered its monitor before printing "watching":
	// whether or not the signal reached d1 before the kill, the
	// disconnection fires it with ErrNodeDown.
	if err := d1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(5 * time.Second) // for both watchers together
	for _, d := range []*daemonProc{d2, d3} {
		line := d.expectLine(t, time.Until(deadline), "down", target.String())
		if !strings.Contains(line, actor.ErrNodeDown.Error()) {
			t.Fatalf("daemon %v: down line %q, want the reason %q", d.id, line, actor.ErrNodeDown)
		}
	}
	t.Logf("monitors fired %v after SIGKILL", time.Since(start))
}

// A peer killed and restarted with the same identity is reachable at once
// over QUIC, although its old connection looks alive to the others until
// QUIC's idle timeout (30 s): they drop the connections of the old
// incarnation as soon as the new one identifies itself.
func TestRestartedPeerIsReachableAtOnceOverQUIC(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the troupe binary")
	}
	quic := []string{"-listen", "/ip4/127.0.0.1/udp/0/quic-v1", "-mdns=false"}
	d1 := startDaemonIn(t, "", quic...)
	home := t.TempDir()
	d2 := startDaemonHome(t, home, "", append(quic, "-connect", d1.addr.String())...)
	joined := func(d, o *daemonProc) {
		t.Helper()
		line := d.expectLine(t, 10*time.Second, "joined "+o.id.String()+" (echo")
		if strings.Contains(line, "failed") {
			t.Fatalf("daemon %v asking %v's echo: %q", d.id, o.id, line)
		}
	}
	joined(d1, d2)
	joined(d2, d1)
	if err := d2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d2.cmd.Wait()
	again := startDaemonHome(t, home, "", append(quic, "-connect", d1.addr.String())...)
	if again.id != d2.id {
		t.Fatalf("restarted with peer ID %v, want %v", again.id, d2.id)
	}
	// Its daemon asks d1's echo on connecting (5 s timeout), and d1's
	// answer must come back on the new connection.
	start := time.Now()
	joined(again, d1)
	t.Logf("the restarted peer reached d1's echo %v after it started", time.Since(start))
	// d1 saw no disconnection (the old connection looked alive until it
	// was closed as stale) and still reports that the peer left and came
	// back (routing.EvtPeerRestarted).
	d1.expectLine(t, 5*time.Second, "left "+d2.id.String())
	joined(d1, again)

	// And d1 reaches the new incarnation's actors (the CLI asks through
	// d1's daemon, 5 s at most).
	if out := cliOK(t, d1.home, "ask", again.id.String()+"/echo", `"hi"`, "--timeout", "5s"); out != `"hi"`+"\n" {
		t.Fatalf("d1 asking the restarted peer's echo: %q", out)
	}
}

// With both transports, as peers have by default, a peer's crash is seen
// at once: peers dial TCP first, whose connection the dead process's
// kernel resets, where a QUIC connection would look alive until its 30 s
// idle timeout.
func TestSIGKILLIsSeenAtOnceOverDefaultTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the troupe binary")
	}
	both := []string{"-listen", "/ip4/127.0.0.1/tcp/0", "-listen", "/ip4/127.0.0.1/udp/0/quic-v1", "-mdns=false"}
	d := startDaemonIn(t, "", both...)
	if len(d.addrs) != 2 {
		t.Fatalf("daemon listens on %v", d.addrs)
	}
	me := newNode(t, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var addrs []ma.Multiaddr // as discovery gives them: every address, without /p2p/
	for _, a := range d.addrs {
		ai, err := libp2ppeer.AddrInfoFromP2pAddr(a)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ai.Addrs...)
	}
	if err := me.Connect(ctx, libp2ppeer.AddrInfo{ID: d.id, Addrs: addrs}); err != nil {
		t.Fatal(err)
	}
	for _, c := range me.Host().Network().ConnsToPeer(d.id) {
		t.Logf("connection over %v", c.RemoteMultiaddr())
	}
	echo, _ := peer.Ref(d.id, "echo")
	downs := monitor(t, me, echo)
	if _, err := me.System().Ask(ctx, echo, Ping{1}); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case down := <-downs:
		if !errors.Is(down.Reason, actor.ErrNodeDown) {
			t.Fatalf("down %+v, want ErrNodeDown", down)
		}
		t.Logf("Down %v after SIGKILL", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("no Down within 5 s of SIGKILL")
	}
}
