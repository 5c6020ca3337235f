package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestSendWaitLongerThanTimeout: -wait is how long a send to another
// peer waits for a bounce, whatever -timeout (the wait for room) says: a
// live actor that never replies makes it "unconfirmed", not a deadline
// error of the request.
func TestSendWaitLongerThanTimeout(t *testing.T) {
	a, b, ctx := connectedDaemons(t)
	got := make(chan struct{}, 1)
	var silentLoop func(c *actor.Context)
	silentLoop = func(c *actor.Context) {
		c.Receive(actor.On(func(string) {
			select {
			case got <- struct{}{}:
			default:
			}
			silentLoop(c) // never replies
		}))
	}
	silent, err := b.node.System().Spawn("silent", silentLoop)
	if err != nil {
		t.Fatal(err)
	}
	req := control.Request{Cmd: "send", Addr: silent.String(), Type: "string", Body: json.RawMessage(`"hi"`), Timeout: 50 * time.Millisecond, Wait: 300 * time.Millisecond}
	res, _, err := a.handle(ctx, req, nil)
	if err != nil {
		t.Fatalf("send with -wait above -timeout: %v", err)
	}
	if r, ok := res.(control.SendResult); !ok || r.Status != "unconfirmed" || r.WaitMS != 300 {
		t.Fatalf("send to an actor that never replies: %+v", res)
	}
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("the message did not arrive")
	}
}

// TestDialAddrsFromAHostilePeer: the addresses a peer says it listens on
// reach 'troupe peers' only as text, and only so many.
func TestDialAddrsFromAHostilePeer(t *testing.T) {
	const id = "12D3KooWExample"
	evil, err := ma.NewComponent("dns4", "\x1b[2Jevil")
	if err != nil {
		t.Fatal(err)
	}
	listen := []ma.Multiaddr{{*evil}, ma.StringCast("/ip4/127.0.0.1/tcp/4001")}
	for i := range 2 * maxPeerAddrs {
		listen = append(listen, ma.StringCast(fmt.Sprintf("/ip4/10.0.0.%d/tcp/4001", i)))
	}
	got := dialAddrs(id, listen, nil)
	if len(got) != maxPeerAddrs {
		t.Fatalf("%d addresses kept of %d: %q", len(got), len(listen), got)
	}
	for _, a := range got {
		if a != cli.Clean(a) || !strings.HasSuffix(a, "/p2p/"+id) {
			t.Fatalf("address %q", a)
		}
	}
	conn := ma.StringCast("/ip4/127.0.0.1/tcp/55555")
	if got := dialAddrs(id, []ma.Multiaddr{{*evil}}, []ma.Multiaddr{conn, conn}); !slices.Equal(got, []string{conn.String() + "/p2p/" + id}) {
		t.Fatalf("with no clean listen address: %q; want the connection's", got)
	}
}

// TestConnectedElsewhere: 'troupe connect' skips the dial of a peer
// connected directly through another address, but dials one reached
// through relays only (a direct address is then what the user wants).
func TestConnectedElsewhere(t *testing.T) {
	conn := ma.StringCast("/ip4/127.0.0.1/tcp/50000")
	given := []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/4001")}
	if via, ok := connectedElsewhere([]ma.Multiaddr{conn}, false, given); !ok || !via.Equal(conn) {
		t.Fatalf("direct, elsewhere: %v %v", via, ok)
	}
	for _, c := range []struct {
		name    string
		conns   []ma.Multiaddr
		relayed bool
		given   []ma.Multiaddr
	}{
		{"not connected", nil, false, given},
		{"relayed only", []ma.Multiaddr{conn}, true, given},
		{"through the address given", given, false, given},
		{"no address given", []ma.Multiaddr{conn}, false, nil},
	} {
		if _, ok := connectedElsewhere(c.conns, c.relayed, c.given); ok {
			t.Errorf("%s: the dial is skipped", c.name)
		}
	}
}

// TestAskByBareName: `troupe ask NAME` finds the actor on whichever peer
// of the mesh has it (Node.Whereis), here another daemon's.
func TestAskByBareName(t *testing.T) {
	a, b, ctx := connectedDaemons(t)
	var loop func(c *actor.Context)
	loop = func(c *actor.Context) {
		c.Receive(actor.On(func(s string) {
			c.Reply("from b: " + s)
			loop(c)
		}))
	}
	if _, err := b.node.System().Spawn("only-on-b", loop); err != nil {
		t.Fatal(err)
	}
	req := control.Request{Cmd: "ask", Addr: "only-on-b", Type: "string", Body: json.RawMessage(`"hi"`), Timeout: 5 * time.Second}
	res, _, err := a.handle(ctx, req, nil)
	if err != nil {
		t.Fatalf("ask by bare name: %v", err)
	}
	if r, ok := res.(control.AskResult); !ok || string(r.Reply) != `"from b: hi"` {
		t.Fatalf("ask by bare name answered %+v, want b's actor's reply", res)
	}
}

// connectedDaemons starts two test daemons, a connected to b, and a
// context that bounds the test (20 s).
func connectedDaemons(t *testing.T) (a, b *Daemon, ctx context.Context) {
	t.Helper()
	a, _ = startTestDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	b, _ = startTestDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if err := a.node.Connect(ctx, *b.node.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	return a, b, ctx
}
