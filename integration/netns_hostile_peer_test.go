//go:build linux

package integration

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// The attacker side of TestHostileLoadInNamespaces: raw libp2p hosts
// (no Troupe node) that speak Troupe's wire protocol by hand — the
// identify agent and hello a Troupe node sends, then frames written with
// codec's FrameWriter or byte by byte. Each step runs on every identity
// at once, bounded in count and in time (the duration the test gives),
// and ends with the identity's streams reset and its connection closed,
// which is when the daemon must give everything back. Each step is
// against a daemon of its own (the test's): libp2p's resource manager
// admits a burst of 16 connections per IPv4 address, then one per 5 s,
// so a daemon could not take many steps' fresh connections.

// hostileIdentity is one attacking peer: a host, its incarnation, and the
// streams it holds open in the current step.
type hostileIdentity struct {
	h      host.Host
	inc    uint64
	target libp2ppeer.AddrInfo // the daemon of the current step
	mu     sync.Mutex          // guards held
	held   []network.Stream
}

// hostileStats is what a step did, summed over the identities.
type hostileStats struct {
	Streams   int64 // streams opened
	Refused   int64 // streams the daemon refused or reset while we wrote
	Frames    int64 // frames (or fragments, monitors, asks) written
	Bytes     int64 // bytes written
	Connected int   // identities connected when the step began
}

// newHostileIdentity starts a raw host: TCP only, no listen address (it
// dials from its namespace's address), unlimited by its own resource
// manager, announcing a Troupe agent with a fresh incarnation.
func newHostileIdentity(psk pnet.PSK) (*hostileIdentity, error) {
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, err
	}
	inc, err := routing.NewIncarnation()
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(priv), libp2p.NoListenAddrs, libp2p.Transport(tcp.NewTCPTransport),
		libp2p.UserAgent(routing.AgentVersion(inc)), libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableRelay(),
	}
	if psk != nil {
		opts = append(opts, libp2p.PrivateNetwork(psk))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, err
	}
	id := &hostileIdentity{h: h, inc: inc}
	// Streams the daemon opens to us (replies, its control stream) are
	// accepted and never read: the "replies never read" step.
	for _, p := range []protocol.ID{routing.ProtoMsg, routing.ProtoCtl} {
		h.SetStreamHandler(p, func(s network.Stream) { id.hold(s) })
	}
	return id, nil
}

func (id *hostileIdentity) hold(s network.Stream) {
	id.mu.Lock()
	defer id.mu.Unlock()
	id.held = append(id.held, s)
}

// release resets every stream held and closes the connection.
func (id *hostileIdentity) release() {
	id.mu.Lock()
	held := id.held
	id.held = nil
	id.mu.Unlock()
	for _, s := range held {
		_ = s.Reset()
	}
	_ = id.h.Network().ClosePeer(id.target.ID)
}

// open opens a stream of protocol p with its hello written and flushed.
func (id *hostileIdentity) open(ctx context.Context, p protocol.ID) (network.Stream, *codec.FrameWriter, error) {
	s, err := id.h.NewStream(ctx, id.target.ID, p)
	if err != nil {
		return nil, nil, err
	}
	id.hold(s)
	fw := codec.NewFrameWriter(s, 0, codec.WithCompact(p == routing.ProtoMsg || p == routing.ProtoCtl))
	body, err := cbor.Marshal(map[int]uint64{1: id.inc})
	if err != nil {
		return nil, nil, err
	}
	if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: "troupe.hello", Body: body}); err != nil {
		return nil, nil, err
	}
	return s, fw, fw.Flush()
}

// openRaw opens stream i of a step without a hello, alternately a user
// and a control one (each peer may hold up to 4 of each kind that way: a
// stream with a hello ends its peer's older ones).
func (id *hostileIdentity) openRaw(ctx context.Context, i int) (network.Stream, error) {
	s, err := id.h.NewStream(ctx, id.target.ID, []protocol.ID{routing.ProtoMsg, routing.ProtoCtl}[i%2])
	if err == nil {
		id.hold(s)
	}
	return s, err
}

// hostileStep is one kind of attack run by one identity until ctx ends.
type hostileStep func(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error

// hostileSteps are the steps by name; n bounds each identity's count.
var hostileSteps = map[string]hostileStep{
	"garbage": stepGarbage, "frames": stepFrames, "fragments": stepFragments,
	"trickle": stepTrickle, "monitors": stepMonitors, "unread": stepUnread,
}

// stepGarbage opens n streams one after another, each a hello then
// bytes that are no frame (a length prefix of 10 bytes), and ends it.
func stepGarbage(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error {
	junk := make([]byte, 256)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		s, _, err := id.open(ctx, routing.ProtoMsg)
		atomic.AddInt64(&st.Streams, 1)
		if err != nil {
			atomic.AddInt64(&st.Refused, 1)
			continue
		}
		_, _ = rand.Read(junk)
		for j := range 10 {
			junk[j] = 0xff
		}
		if _, err := s.Write(junk); err != nil {
			atomic.AddInt64(&st.Refused, 1)
		}
		atomic.AddInt64(&st.Frames, 1)
		_ = s.Close()
	}
	return nil
}

// stepFrames opens n streams, alternately user and control ones, each
// a frame of 4 MiB announced and sent but for its last byte, held until
// ctx ends (openRaw).
func stepFrames(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error {
	const size = codec.DefaultMaxFrame - 64
	data := make([]byte, 64<<10)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := id.openRaw(ctx, i)
			atomic.AddInt64(&st.Streams, 1)
			if err == nil {
				_, err = s.Write(binary.AppendUvarint(nil, size))
			}
			for left := size - 1; left > 0 && err == nil && ctx.Err() == nil; {
				k := min(left, len(data))
				if _, err = s.Write(data[:k]); err == nil {
					left -= k
					atomic.AddInt64(&st.Bytes, int64(k))
				}
			}
			if err != nil {
				atomic.AddInt64(&st.Refused, 1)
				return
			}
			atomic.AddInt64(&st.Frames, 1)
		})
	}
	wg.Wait()
	return nil
}

// stepFragments opens n streams, each a hello and then the fragments of
// a 4 MiB message to echo but for its last fragment, held until ctx ends.
func stepFragments(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error {
	const total, chunk = codec.DefaultMaxFrame - 4096, 56 << 10
	data := make([]byte, chunk)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, fw, err := id.open(ctx, routing.ProtoMsg)
			atomic.AddInt64(&st.Streams, 1)
			if err != nil {
				atomic.AddInt64(&st.Refused, 1)
				return
			}
			for off := 0; off+chunk < total && ctx.Err() == nil; off += chunk {
				// The wire form of a fragment: {1: type, 3: total} on the
				// first, {4: data} on every one.
				f := map[int]any{4: data}
				if off == 0 {
					f[1], f[3] = "string", uint64(total)
				}
				body, err := cbor.Marshal(f)
				if err != nil {
					return
				}
				env := &codec.Envelope{Kind: codec.KindSystem, Type: "troupe.fragment", To: "echo", FromName: "x", Corr: 1, Body: body}
				err = fw.WriteEnvelope(env)
				if err == nil {
					err = fw.Flush()
				}
				if err != nil {
					atomic.AddInt64(&st.Refused, 1)
					return
				}
				atomic.AddInt64(&st.Frames, 1)
				atomic.AddInt64(&st.Bytes, chunk)
			}
		})
	}
	wg.Wait()
	return nil
}

// stepTrickle opens n streams (openRaw), each a 1 MiB frame sent one
// byte per 2 s; a stream the daemon resets counts as refused.
func stepTrickle(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := id.openRaw(ctx, i)
			atomic.AddInt64(&st.Streams, 1)
			if err == nil {
				_, err = s.Write(binary.AppendUvarint(nil, 1<<20))
			}
			tick := time.NewTicker(2 * time.Second)
			defer tick.Stop()
			for err == nil {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err = s.Write([]byte{0}); err == nil {
					atomic.AddInt64(&st.Bytes, 1)
				}
			}
			atomic.AddInt64(&st.Refused, 1)
		})
	}
	wg.Wait()
	return nil
}

// stepMonitors sends n monitors of echo on one control stream.
func stepMonitors(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error {
	_, fw, err := id.open(ctx, routing.ProtoCtl)
	atomic.AddInt64(&st.Streams, 1)
	if err != nil {
		atomic.AddInt64(&st.Refused, 1)
		return nil
	}
	for i := 1; i <= n && ctx.Err() == nil; i++ {
		body, _ := cbor.Marshal(map[int]uint64{1: uint64(i)})
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: "troupe.monitor", To: "echo", FromName: "w", Body: body}); err != nil {
			atomic.AddInt64(&st.Refused, 1)
			return nil
		}
		atomic.AddInt64(&st.Frames, 1)
	}
	if err := fw.Flush(); err != nil {
		atomic.AddInt64(&st.Refused, 1)
	}
	return nil
}

// stepUnread sends up to n asks of echo as fast as the stream takes
// them; the daemon's replies come on streams we accept and never read.
func stepUnread(ctx context.Context, id *hostileIdentity, n int, st *hostileStats) error {
	s, fw, err := id.open(ctx, routing.ProtoMsg)
	atomic.AddInt64(&st.Streams, 1)
	if err != nil {
		atomic.AddInt64(&st.Refused, 1)
		return nil
	}
	// A write that blocks (the daemon paused our reader) ends with ctx.
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	body, _ := cbor.Marshal("ping")
	for i := 1; i <= n && ctx.Err() == nil; i++ {
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, Type: "string", To: "echo", FromName: "a", Corr: uint64(i), Body: body}); err != nil {
			if ctx.Err() == nil {
				atomic.AddInt64(&st.Refused, 1)
			}
			return nil
		}
		atomic.AddInt64(&st.Frames, 1)
	}
	return nil
}
