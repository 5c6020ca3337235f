package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// An impostor in another room holds the actor name chat-bob too. Alice
// saw the real bob in her room, so bob is bound to his peer on her side;
// once bob has moved to another room and both chat-bob actors are in
// alice's directory, her /msg bob reaches bob every time and never the
// impostor (whatever the order of their peer IDs), and a nick nobody has
// is an error on her screen.
func TestChatMsgNeverReachesImpostor(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	t.Parallel() // its own namespaces and chat daemons; no duration asserted
	hosts := newNetns(t).lan(3)
	config := `{"mesh": "chatimpostor", "listen": ["/ip4/0.0.0.0/tcp/0"], "log_level": "warn"}`
	alice := startChat(t, hosts[0], "alice", config)
	bob := startChat(t, hosts[1], "bob", config)
	alice.expectLine(t, 20*time.Second, "* bob joined #lobby")
	bob.expectLine(t, 20*time.Second, "* alice joined #lobby")
	bob.say(t, "/join side")
	bob.expectLine(t, 5*time.Second, "* joined #side")
	alice.expectLine(t, 10*time.Second, "* bob left #lobby")
	impostor := startChat(t, hosts[2], "bob", config, "-room", "den")
	impostor.expectLine(t, 10*time.Second, "* joined #den")

	// Wait until alice's directory knows both chat-bob (their rooms are in
	// their advertisements).
	// Polling another process's view: no event to await.
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		alice.say(t, "/rooms")
		line := alice.expectLine(t, 5*time.Second, "* rooms:")
		if !strings.Contains(line, "#den") || !strings.Contains(line, "#side") {
			return fmt.Errorf("alice's directory never knew both rooms: %q", line)
		}
		return nil
	})
	for i := range 4 {
		text := fmt.Sprintf("secret %d", i)
		alice.say(t, "/msg bob "+text)
		alice.expectLine(t, 5*time.Second, "[dm to bob] "+text)
		bob.expectLine(t, 10*time.Second, "[dm from alice] "+text)
	}
	alice.say(t, "/msg carol hello")
	alice.expectLine(t, 5*time.Second, "! not sent: no user carol is known")
	// The impostor had time to get the messages: they went to bob first.
	impostor.say(t, "/who")
	impostor.expectLine(t, 5*time.Second, "* in #den")
	for _, line := range append(impostor.seen, drain(impostor)...) {
		if strings.Contains(line, "secret") {
			t.Fatalf("the impostor got alice's private message: %q", line)
		}
	}
}

// drain returns the lines c printed so far that nobody read yet.
func drain(c *chatProc) []string {
	var out []string
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return out
			}
			out = append(out, line)
		default:
			return out
		}
	}
}
