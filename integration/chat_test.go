package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chatProc is a running `troupe chat --plain`; its stdout lines are read
// with expectLine.
type chatProc struct {
	*daemonProc
	in io.WriteCloser
}

// startChat starts `troupe chat --plain --nick nick` on a fresh home with
// the given config.json, inside network namespace ns.
func startChat(t *testing.T, ns, nick, config string, args ...string) *chatProc {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return startChatHome(t, home, ns, nick, args...)
}

// startChatHome starts `troupe chat --plain --nick nick` on home (through
// its daemon when one runs), inside network namespace ns unless ns is "".
func startChatHome(t *testing.T, home, ns, nick string, args ...string) *chatProc {
	t.Helper()
	argv := append([]string{troupeBinary(t), "chat", "--plain", "--nick", nick, "-home", home}, args...)
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &chatProc{daemonProc: &daemonProc{cmd: cmd, home: home, lines: make(chan string, 1000)}, in: in}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// say types a line into the chat.
func (c *chatProc) say(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatalf("typing %q: %v", line, err)
	}
}

// Three `troupe chat --plain` in three network namespaces, given no
// address: they find each other by mDNS, see each other join the room,
// exchange a room line and a /msg, and see a SIGKILLed user leave.
func TestChatInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	hosts := newNetns(t).lan(3)
	config := `{"mesh": "chattest", "listen": ["/ip4/0.0.0.0/tcp/0"], "log_level": "warn"}`
	nicks := []string{"alice", "bob", "carol"}
	chats := make([]*chatProc, 3)
	for i, h := range hosts {
		chats[i] = startChat(t, h, nicks[i], config)
	}
	for i, c := range chats {
		c.expectLine(t, 10*time.Second, "* you are "+nicks[i])
		for j, other := range nicks {
			if i != j {
				c.expectLine(t, 20*time.Second, "* "+other+" joined #lobby")
			}
		}
	}
	alice, bob, carol := chats[0], chats[1], chats[2]

	alice.say(t, "hello room")
	for _, c := range chats {
		c.expectLine(t, 10*time.Second, "[#lobby] <alice> hello room")
	}
	bob.say(t, "/msg carol psst")
	bob.expectLine(t, 5*time.Second, "[dm to carol] psst")
	carol.expectLine(t, 10*time.Second, "[dm from bob] psst")
	alice.say(t, "/who")
	alice.expectLine(t, 5*time.Second, "* in #lobby: alice (you), bob, carol")
	for _, line := range alice.seen {
		if strings.Contains(line, "psst") {
			t.Fatalf("alice saw bob's private message: %q", line)
		}
	}

	if err := carol.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, c := range chats[:2] {
		c.expectLine(t, 10*time.Second, "* carol left #lobby")
	}
	alice.say(t, "/quit")
	alice.expectLine(t, 5*time.Second, "* bye")
	waitExit(t, alice.daemonProc, 0)
	bob.expectLine(t, 10*time.Second, "* alice left #lobby")
}

// Chats through a daemon's control socket and an embedded chat peer on
// 127.0.0.1: a nick taken on the same peer gets a number, a nick taken on
// another peer is settled by peer ID order, /nick and /msg work across.
func TestChatThroughDaemonAndNickCollisions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	t.Parallel() // its own daemon on 127.0.0.1:0; no duration asserted
	d := startDaemon(t)
	dave := startChatHome(t, d.home, "", "dave")
	dave.expectLine(t, 10*time.Second, "* you are dave ("+d.id.String()+"/chat-dave)")
	dave.expectLine(t, 5*time.Second, "* joined #lobby")
	dave2 := startChatHome(t, d.home, "", "dave")
	dave2.expectLine(t, 10*time.Second, "* nick dave is taken on this peer; you are dave2")
	dave.expectLine(t, 10*time.Second, "* dave2 joined #lobby")

	// A user of another peer also called dave: nobody is renamed; each
	// side shows the other's dave with its peer (the nick is bound to the
	// peer that used it first, its own user's on each side).
	other := startChat(t, "", "dave", loopbackConfig, "-connect", d.addr.String())
	line := other.expectLine(t, 10*time.Second, "* peer ")
	otherID := strings.TrimSuffix(strings.Fields(line)[2], ",")
	otherShown, daveShown := "dave@"+otherID[len(otherID)-6:], "dave@"+d.id.String()[len(d.id.String())-6:]
	dave.expectLine(t, 20*time.Second, "* "+otherShown+" joined #lobby")
	other.expectLine(t, 20*time.Second, "* "+daveShown+" joined #lobby")
	other.say(t, "I am dave")
	dave.expectLine(t, 10*time.Second, "[#lobby] <"+otherShown+"> I am dave")
	dave.say(t, "no, I am")
	other.expectLine(t, 10*time.Second, "[#lobby] <"+daveShown+"> no, I am")

	dave2.say(t, "/nick zed")
	dave2.expectLine(t, 10*time.Second, "* you are zed")
	other.expectLine(t, 10*time.Second, "* dave2 is now zed")
	other.expectLine(t, 10*time.Second, "* zed joined #lobby")
	other.say(t, "/msg zed over here")
	dave2.expectLine(t, 10*time.Second, "[dm from "+otherShown+"] over here")
	dave.say(t, "/msg "+otherShown+" to you")
	other.expectLine(t, 10*time.Second, "[dm from "+daveShown+"] to you")
	// A chat's own peer says the binary's version too, as the daemon does.
	var info struct {
		Reply struct {
			Version string `json:"version"`
		} `json:"reply"`
	}
	cliJSON(t, d.home, &info, "ask", otherID+"/info", "{}")
	var id struct {
		Version string `json:"version"`
	}
	cliJSON(t, d.home, &id, "id")
	if info.Reply.Version == "" || info.Reply.Version != id.Version {
		t.Fatalf("the chat's peer says version %q, the daemon %q", info.Reply.Version, id.Version)
	}
	for _, c := range []*chatProc{dave, other} {
		for _, l := range c.seen {
			if strings.Contains(l, "you become") || strings.Contains(l, "is now dave") {
				t.Fatalf("a user was renamed for another peer's user: %q", l)
			}
		}
	}
	dave2.say(t, "/rooms")
	dave2.expectLine(t, 5*time.Second, "* rooms: #lobby")
	dave2.say(t, "/join side")
	dave2.expectLine(t, 5*time.Second, "* joined #side")
	other.expectLine(t, 10*time.Second, "* zed left #lobby")
	dave2.say(t, "/bogus")
	dave2.expectLine(t, 5*time.Second, "! unknown command /bogus")
	// A second chat on the home of a chat's own peer is refused: that peer
	// goes when its chat does.
	code, _, errOut := cli(t, other.home, "chat", "--plain", "--nick", "eve")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("belongs to another 'troupe chat' (pid %d)", other.cmd.Process.Pid)) {
		t.Fatalf("chat on a chat's peer: %d %q", code, errOut)
	}
	// SIGINT ends a chat through the daemon as /quit does.
	eve := startChatHome(t, d.home, "", "eve")
	eve.expectLine(t, 10*time.Second, "* joined #lobby")
	if err := eve.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	eve.expectLine(t, 10*time.Second, "* bye")
	waitExit(t, eve.daemonProc, 0)
	// Closing stdin ends a chat through the daemon; the daemon lives on.
	dave2.in.Close()
	dave2.expectLine(t, 5*time.Second, "* bye")
	waitExit(t, dave2.daemonProc, 0)
	if got := cliOK(t, d.home, "id"); !strings.Contains(got, d.id.String()) {
		t.Fatalf("daemon after a chat ended: %q", got)
	}
	// A chat through a daemon that stops ends with an error.
	zed := startChatHome(t, d.home, "", "zed")
	zed.expectLine(t, 10*time.Second, "* joined #lobby")
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*chatProc{zed, dave} {
		c.expectLine(t, 10*time.Second, "! the daemon is stopping")
		waitExit(t, c.daemonProc, 1)
	}
}

// A late joiner (through the daemon) sees the room's earlier lines of the
// users present, the remote user's included, marked as history, oldest
// first, between the history markers; live lines carry a time.
func TestChatLateJoinerSeesHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	d := startDaemon(t)
	ann := startChatHome(t, d.home, "", "ann")
	ann.expectLine(t, 10*time.Second, "* joined #lobby")
	bob := startChat(t, "", "bob", loopbackConfig, "-connect", d.addr.String())
	ann.expectLine(t, 20*time.Second, "* bob joined #lobby")
	bob.expectLine(t, 20*time.Second, "* ann joined #lobby")
	ann.say(t, "first")
	bob.expectLine(t, 10*time.Second, "[#lobby] <ann> first")
	// History is ordered by the lines' times, kept in milliseconds: bob's
	// answer can come within ann's millisecond on a fast loopback, and
	// then their order is a tie. A pace, not a wait for an event.
	time.Sleep(5 * time.Millisecond)
	bob.say(t, "second")
	live := ann.expectLine(t, 10*time.Second, "[#lobby] <bob> second")
	if !regexp.MustCompile(`^\d\d:\d\d \[#lobby\] <bob> second$`).MatchString(live) {
		t.Fatalf("a live line without its time: %q", live)
	}

	carol := startChatHome(t, d.home, "", "carol")
	carol.expectLine(t, 15*time.Second, "* end of history")
	var order []string
	for _, l := range carol.seen {
		if strings.HasPrefix(l, "* history of #lobby") || strings.HasPrefix(l, "history ") {
			order = append(order, l)
		}
	}
	hist := regexp.MustCompile(`^history \d\d:\d\d \[#lobby\] <(ann|bob|bob@\w{6})> (first|second)$`)
	if len(order) != 3 || !strings.HasPrefix(order[0], "* history of #lobby: the last 2 lines") ||
		!hist.MatchString(order[1]) || !strings.HasSuffix(order[1], "<ann> first") ||
		!hist.MatchString(order[2]) || !strings.HasSuffix(order[2], "> second") {
		t.Fatalf("carol's history: %q", order)
	}
	// Said after carol came: live, not history.
	ann.say(t, "third")
	if l := carol.expectLine(t, 10*time.Second, "<ann> third"); strings.HasPrefix(l, "history") {
		t.Fatalf("a live line marked as history: %q", l)
	}
}
