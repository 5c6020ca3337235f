package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// DefaultAskTimeout and MaxRequestTime are the default and the maximum
// wait of requests that talk to other peers.
const (
	DefaultAskTimeout = 5 * time.Second
	MaxRequestTime    = 5 * time.Minute
)

// handle answers one control request. Safe for concurrent use.
func (d *Daemon) handle(ctx context.Context, req control.Request, conn net.Conn) (any, func(), error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	if req.Cmd == "send" {
		// -wait is the send's own wait for a bounce, not bounded by
		// -timeout (the wait for room in a link): see send.
		timeout = max(timeout, req.Wait)
	}
	if timeout > MaxRequestTime {
		timeout = MaxRequestTime
	}
	if req.Cmd == "chat" {
		if d.embeddedChat {
			return nil, nil, fmt.Errorf("the peer of this home belongs to another 'troupe chat' (pid %d); run 'troupe daemon' on it so that several chats can share one peer, or use another home", os.Getpid())
		}
		return d.chat(ctx, req, conn)
	}
	if req.Cmd == "deadletters" && req.Follow {
		return d.followDeadLetters(ctx, req, conn)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch req.Cmd {
	case "deadletters":
		return d.deadLetters(req.Count, req.After), nil, nil
	case "loglevel":
		r, err := d.logLevel(req.Level)
		return r, nil, err
	case "id":
		return d.id(), nil, nil
	case "peers":
		return d.peers(), nil, nil
	case "actors":
		r, err := d.actors(ctx, req.Peer)
		return r, nil, err
	case "send", "ask":
		r, err := d.sendOrAsk(ctx, req)
		return r, nil, err
	case "ping":
		r, err := d.ping(ctx, req.Peer, req.Count)
		return r, nil, err
	case "connect":
		r, err := d.connect(ctx, req.Addr)
		return r, nil, err
	case "stop":
		return d.requestStop()
	case "mesh": // the latest sample of the mesh view (troupe top)
		_, b, err := d.view.Next(ctx, req.After)
		return json.RawMessage(b), nil, err
	case "doctor":
		return d.doctorInfo(), nil, nil
	}
	return nil, nil, fmt.Errorf("unknown request %q (is the daemon older than this troupe?)", req.Cmd)
}

func (d *Daemon) id() control.IDResult {
	r := control.IDResult{ID: d.node.ID().String(), Reachability: strings.ToLower(d.node.Reachability().String()), Mesh: d.cfg.Mesh, Version: d.version, Home: string(d.home), Addrs: []string{}}
	r.HolePunches.Tried, r.HolePunches.Succeeded = d.node.HolePunches()
	r.MovedOffRelay = d.node.Stats().MovedOffRelay
	r.GCHeapFloor = d.node.System().GCHeapFloor()
	r.MemoryRelease = d.memoryRelease
	for _, a := range d.node.Addrs() {
		r.Addrs = append(r.Addrs, a.String())
	}
	return r
}

// maxPeerAddrs caps the addresses 'troupe peers' shows of one peer: the
// ones it listens on are what it says (identify), up to hundreds.
const maxPeerAddrs = 8

// dialAddrs are the addresses to dial peer id at, with /p2p/ ('troupe
// connect' takes them): those it listens on (listen: what identify told),
// else those of its connections (conns: a connection it opened comes from
// a port it does not listen on). The peer chose the first: one with text
// that would reach a terminal as more than text (a DNS name with control
// characters) is left out, and at most maxPeerAddrs are kept, sorted.
func dialAddrs(id string, listen, conns []ma.Multiaddr) []string {
	out := []string{}
	for _, a := range listen {
		if s := a.String(); s == cli.Clean(s) {
			out = append(out, s+"/p2p/"+id)
		}
	}
	if len(out) == 0 {
		for _, a := range conns {
			if s := a.String(); s == cli.Clean(s) {
				out = append(out, s+"/p2p/"+id)
			}
		}
	}
	slices.Sort(out) // two connections (one each way) may share an address
	out = slices.Compact(out)
	return out[:min(len(out), maxPeerAddrs)]
}

func (d *Daemon) peers() []control.PeerInfo {
	ads := map[string]int{}
	dir := d.node.Directory().Peers()
	for i, ad := range dir {
		if id, err := libp2ppeer.IDFromBytes(ad.Peer); err == nil {
			ads[id.String()] = i
		}
	}
	h := d.node.Host()
	out := []control.PeerInfo{}
	for _, id := range d.node.Peers() {
		p := control.PeerInfo{ID: id.String(), Relayed: d.node.Relayed(id)}
		var conns []ma.Multiaddr
		for _, c := range h.Network().ConnsToPeer(id) {
			conns = append(conns, c.RemoteMultiaddr())
		}
		p.Addrs = dialAddrs(p.ID, h.Peerstore().Addrs(id), conns)
		if l := h.Peerstore().LatencyEWMA(id); l > 0 {
			p.LatencyMS = float64(l.Microseconds()) / 1000
		}
		if i, ok := ads[p.ID]; ok {
			p.Actors, p.Groups = dir[i].Actors, dir[i].Groups
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b control.PeerInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// actors lists the actors of this peer, or asks another peer's info actor.
func (d *Daemon) actors(ctx context.Context, peerStr string) (control.ActorsResult, error) {
	if peerStr == "" || peerStr == d.node.ID().String() {
		return control.ActorsResult{Peer: d.node.ID().String(), Actors: d.node.System().Names()}, nil
	}
	id, err := libp2ppeer.Decode(peerStr)
	if err != nil {
		return control.ActorsResult{}, fmt.Errorf("%q is not a peer ID", peerStr)
	}
	ref, _ := peer.Ref(id, "info")
	reply, err := d.node.System().Ask(ctx, ref, Info{})
	if err != nil {
		return control.ActorsResult{}, fmt.Errorf("asking %s: %w", ref, askCause(err, ref.Peer()))
	}
	info, ok := reply.(Info)
	if !ok {
		return control.ActorsResult{}, fmt.Errorf("%s replied with a %T, not an info", ref, reply)
	}
	return control.ActorsResult{Peer: peerStr, Actors: info.Actors}, nil
}

// sendOrAsk sends a message given as JSON; for ask it waits for the reply.
// A type name the daemon has registered yields a value of that type (so a
// local actor receives what a Go sender would send); any other name yields
// a codec.Raw that peers knowing the type decode.
func (d *Daemon) sendOrAsk(ctx context.Context, req control.Request) (any, error) {
	ref, bare, err := ParseTarget(req.Addr)
	if err != nil {
		return nil, err
	}
	if bare {
		if ref, err = d.node.Whereis(ctx, req.Addr); errors.Is(err, actor.ErrNoSuchActor) {
			return nil, cli.Trimmed(fmt.Sprintf("no peer of the mesh has an actor named %q", req.Addr), err)
		} else if err != nil {
			return nil, fmt.Errorf("finding %q in the mesh: %w", req.Addr, err)
		}
	}
	typ := req.Type
	if typ == "" {
		typ = JSONType
	}
	body, err := JSONToCBOR(string(req.Body))
	if err != nil {
		return nil, err
	}
	msg, err := d.reg.Decode(typ, body)
	if err != nil {
		return nil, fmt.Errorf("message does not fit type %q: %w", typ, err)
	}
	sys := d.node.System()
	if ref.Peer() == sys.Peer() {
		if _, ok := sys.Whereis(ref.Name()); !ok {
			return nil, cli.Trimmed(fmt.Sprintf("no such actor %q on this peer", ref.Name()), actor.ErrNoSuchActor)
		}
	}
	if req.Cmd == "send" {
		return d.send(ctx, ref, msg, req.Wait)
	}
	start := time.Now()
	reply, err := sys.Ask(ctx, ref, msg)
	if err != nil {
		return nil, fmt.Errorf("asking %s: %w", ref, askCause(err, ref.Peer()))
	}
	rtt := time.Since(start)
	out, err := toJSON(reply)
	if err != nil {
		return nil, err
	}
	return control.AskResult{Type: d.typeName(reply), Reply: out, RTTMS: ms(rtt)}, nil
}

func (d *Daemon) typeName(v any) string {
	if raw, ok := v.(codec.Raw); ok {
		return raw.Type
	}
	if name, ok := d.reg.TypeName(reflect.TypeOf(v)); ok {
		return name
	}
	return fmt.Sprintf("%T", v)
}

// ping connects to the peer when needed and measures count libp2p ping
// round trips and one round trip to its echo actor.
func (d *Daemon) ping(ctx context.Context, peerStr string, count int) (control.PingResult, error) {
	id, err := libp2ppeer.Decode(peerStr)
	if err != nil {
		return control.PingResult{}, fmt.Errorf("%q is not a peer ID", peerStr)
	}
	if id == d.node.ID() {
		return control.PingResult{}, errors.New("that is this peer")
	}
	if count <= 0 {
		count = 3
	}
	if err := d.node.Connect(ctx, libp2ppeer.AddrInfo{ID: id}); err != nil {
		return control.PingResult{}, fmt.Errorf("connecting to %s: %w", id, cli.DialCause(err, id))
	}
	r := control.PingResult{Peer: id.String(), RTTsMS: []float64{}}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for res := range ping.Ping(pctx, d.node.Host(), id) {
		if res.Error != nil {
			return r, fmt.Errorf("ping %s: %w", id, res.Error)
		}
		r.RTTsMS = append(r.RTTsMS, ms(res.RTT))
		if len(r.RTTsMS) == count {
			break
		}
	}
	if len(r.RTTsMS) < count {
		return r, fmt.Errorf("ping %s: %w", id, ctx.Err())
	}
	cancel()
	echo, _ := peer.Ref(id, "echo")
	start := time.Now()
	if _, err := d.node.System().Ask(ctx, echo, "ping"); err != nil {
		return r, fmt.Errorf("asking %s: %w", echo, askCause(err, echo.Peer()))
	}
	r.EchoMS = ms(time.Since(start))
	return r, nil
}

// connectedElsewhere returns the address of a connection (one of conns)
// when a peer is connected through none of the addresses given, which
// libp2p would then not dial. A peer reached through relays only
// (relayed) is not: Connect dials it directly, as asked.
func connectedElsewhere(conns []ma.Multiaddr, relayed bool, given []ma.Multiaddr) (ma.Multiaddr, bool) {
	if len(conns) == 0 || relayed || len(given) == 0 {
		return nil, false
	}
	for _, c := range conns {
		for _, a := range given {
			if c.Equal(a) {
				return nil, false
			}
		}
	}
	return conns[0], true
}

// connect connects to the peer at addr (with /p2p/).
func (d *Daemon) connect(ctx context.Context, addr string) (control.ConnectResult, error) {
	ai, err := config.ParsePeerAddr(addr)
	if err != nil {
		return control.ConnectResult{}, err
	}
	if ai.ID == d.node.ID() {
		return control.ConnectResult{}, errors.New("that is this peer")
	}
	r := control.ConnectResult{Peer: ai.ID.String()}
	var conns []ma.Multiaddr
	for _, c := range d.node.Host().Network().ConnsToPeer(ai.ID) {
		conns = append(conns, c.RemoteMultiaddr())
	}
	if via, ok := connectedElsewhere(conns, d.node.Relayed(ai.ID), ai.Addrs); ok {
		// Not dialed, and not remembered either (Connect would keep
		// the addresses given, however wrong, for good).
		r.Already, r.Via, r.Relayed = true, via.String()+"/p2p/"+r.Peer, false
		return r, nil
	}
	if err := d.node.Connect(ctx, ai); err != nil {
		return control.ConnectResult{}, fmt.Errorf("connecting to %s: %w", ai.ID, cli.DialCause(err, ai.ID))
	}
	r.Relayed = d.node.Relayed(ai.ID)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
