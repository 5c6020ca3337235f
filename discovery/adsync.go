package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Limits of the directory exchange between two newly connected peers.
const (
	// MaxSyncAds is the most advertisements one exchange carries, and the
	// most entries in a request's summary.
	MaxSyncAds = 1024
	// MaxSyncBytes caps an exchange's response; a request is capped at
	// maxSyncRequest.
	MaxSyncBytes   = 4 << 20
	maxSyncRequest = 256 << 10 // a full summary and our own advertisement

	syncTimeout  = 10 * time.Second
	syncWorkers  = 2
	syncServing  = 8                // concurrent answers; more are reset
	syncQueue    = 256              // peers waiting to be asked; more are skipped
	resyncAfter  = 30 * time.Second // a peer is asked on identify at most this often
	maxDirectory = 4096             // advertisements held; newer peers are ignored (but connected ones, see evictForLocked)
	// maxDirectoryBytes bounds the signed bytes of the advertisements
	// held (an honest one is a few hundred bytes; MaxAdBytes each would
	// be 256 MiB); newer peers are ignored beyond it (as above).
	maxDirectoryBytes = 16 << 20
	// maxAdTTL bounds how long an advertisement is kept without news (or
	// the node's own TTL, if longer), whatever TTL it asks for: a peer
	// cannot fill the directory for good with advertisements of made-up
	// peers.
	maxAdTTL      = 15 * time.Minute
	forceInterval = time.Second // forced republications are at least this far apart

	// A random connected peer is asked every pullMin at first; the wait
	// doubles up to pullMax while the exchanges bring nothing new, and
	// falls back to pullMin when one does.
	pullMin = 250 * time.Millisecond
	pullMax = 30 * time.Second
)

// ErrBadSync reports a directory exchange that is malformed or oversize.
var ErrBadSync = errors.New("discovery: bad directory exchange")

// SyncProtocol is the stream protocol by which a peer asks a newly
// connected peer for the advertisements it lacks (the mesh's directory, in
// one request and one response).
func SyncProtocol(mesh string) protocol.ID { return protocol.ID("/troupe/" + mesh + "/ads/1.0.0") }

// syncRequest summarizes the advertisements the asking peer holds, so that
// only those it lacks and newer ones come back. While gossip delivers every
// republication, an exchange carries a summary and an empty answer; when it
// does not (a peer whose GossipSub mesh has not formed), exchanges keep the
// advertisements it holds from expiring.
type syncRequest struct {
	Have []haveEntry `cbor:"1,keyasint,omitempty"`
	// Own is the asking peer's own signed advertisement: one exchange
	// tells each side about the other.
	Own []byte `cbor:"2,keyasint,omitempty"`
	// Only asks for the answering peer's own advertisement and no other:
	// a narrow directory (ads_scope.go) keeps no second-hand ones.
	Only bool `cbor:"3,keyasint,omitempty"`
}

type haveEntry struct {
	Peer        []byte `cbor:"1,keyasint"`
	Incarnation uint64 `cbor:"2,keyasint"`
	Seq         uint64 `cbor:"3,keyasint"`
}

type syncResponse struct {
	Ads []syncAd `cbor:"1,keyasint,omitempty"`
}

// syncAd is a signed advertisement as its origin published it, with the
// time it has left as the sender sees it (a hint: it never extends the
// advertisement's own TTL).
type syncAd struct {
	Data       []byte `cbor:"1,keyasint"`
	TTLSeconds uint32 `cbor:"2,keyasint"`
}

// syncDecMode decodes ad sync requests and responses.
var syncDecMode = peerDecMode(MaxSyncAds)

// readCapped reads r to its end, failing when it holds more than limit bytes.
func readCapped(r io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrBadSync, limit)
	}
	return data, nil
}

// summary lists the advertisements we hold, for a request. Beyond
// MaxSyncAds it is partial, and answers repeat some of what we hold.
func (d *Directory) summary() []haveEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]haveEntry, 0, min(len(d.peers), MaxSyncAds))
	for _, e := range d.peers {
		if len(out) == MaxSyncAds {
			break
		}
		out = append(out, haveEntry{Peer: e.ad.Peer, Incarnation: e.ad.Incarnation, Seq: e.ad.Seq})
	}
	return out
}

// watchIdentify queues every peer newly identified on a connection we
// dialed that speaks the sync protocol, unless it was asked recently or the
// queue is full (pulls and gossip then bring what it holds, only later).
// The dialing side asks, and tells its own advertisement in the request: a
// peer that hundreds dial at once (a bootstrap peer) only answers.
func (d *Directory) watchIdentify(sub event.Subscription) {
	defer d.wg.Done()
	defer sub.Close()
	proto := SyncProtocol(d.cfg.Mesh)
	asked := make(map[libp2ppeer.ID]time.Time)
	for {
		select {
		case <-d.ctx.Done():
			return
		case ev, ok := <-sub.Out():
			if !ok {
				return
			}
			e := ev.(event.EvtPeerIdentificationCompleted)
			if e.Conn == nil || e.Conn.Stat().Direction != network.DirOutbound || !slices.Contains(e.Protocols, proto) {
				continue
			}
			now := time.Now()
			if t, ok := asked[e.Peer]; ok && now.Sub(t) < resyncAfter {
				continue
			}
			for p, t := range asked { // keep the map small
				if now.Sub(t) >= resyncAfter {
					delete(asked, p)
				}
			}
			select {
			case d.syncq <- e.Peer:
				asked[e.Peer] = now
			default:
				d.syncBusy.Add(1)
			}
			select { // a new peer: pull often again
			case d.pullNow <- struct{}{}:
			default:
			}
		}
	}
}

// pull asks a random connected peer for what we lack, often while that
// brings new peers (a peer learns of the others through the first peer it
// meets long before gossip reaches it), rarely once it brings none.
func (d *Directory) pull() {
	defer d.wg.Done()
	proto := SyncProtocol(d.cfg.Mesh)
	// Refreshing what we hold is gossip's job; a pull that only refreshes
	// backs off, but not beyond a third of the TTL, so that an
	// advertisement gossip fails to refresh is pulled before it expires.
	maxWait := min(pullMax, d.cfg.TTL/3)
	wait := pullMin
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.pullNow:
			wait = pullMin
		case <-t.C:
		}
		var candidates []libp2ppeer.ID
		for _, p := range d.h.Network().Peers() {
			if ok, _ := d.h.Peerstore().SupportsProtocols(p, proto); len(ok) > 0 {
				candidates = append(candidates, p)
			}
		}
		rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
		if d.narrow.Load() {
			// A narrow directory asks only a connected peer whose
			// advertisement it lacks: the others' are refreshed from
			// their origins (expire).
			p, ok := d.missingPeer(candidates)
			candidates = candidates[:0]
			if ok {
				candidates = append(candidates, p)
			}
		}
		if len(candidates) > 0 {
			ctx, cancel := context.WithTimeout(d.ctx, syncTimeout)
			n, added, err := d.syncWith(ctx, candidates[0])
			cancel()
			if err == nil {
				d.synced.Add(uint64(n))
			}
			if added > 0 {
				wait = pullMin
			} else {
				wait = min(2*wait, maxWait)
			}
		} else if d.narrow.Load() { // none missing: nothing to ask for a while
			wait = min(2*wait, maxWait)
		}
		t.Reset(wait/2 + rand.N(wait)) // jittered, so that peers do not ask in step
	}
}

// syncWorker asks the queued peers for what they hold.
func (d *Directory) syncWorker() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case p := <-d.syncq:
			ctx, cancel := context.WithTimeout(d.ctx, syncTimeout)
			n, _, err := d.syncWith(ctx, p)
			cancel()
			if err != nil {
				d.cfg.Logger.Debug("discovery: directory exchange", "peer", p, "err", err)
				continue
			}
			d.synced.Add(uint64(n))
		}
	}
}

// syncWith asks peer p for the advertisements we lack and stores the valid
// ones; each bad one is counted as rejected and dropped. It returns how many
// were stored, and how many of them are of peers we held nothing of.
func (d *Directory) syncWith(ctx context.Context, p libp2ppeer.ID) (stored, added int, err error) {
	r := syncRequest{Have: d.summary(), Only: d.narrow.Load()}
	if own := d.own.Load(); own != nil {
		r.Own = own.raw
	}
	req, err := cbor.Marshal(r)
	if err != nil {
		return 0, 0, err
	}
	s, err := d.h.NewStream(ctx, p, SyncProtocol(d.cfg.Mesh))
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	deadline, _ := ctx.Deadline()
	_ = s.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if _, err := s.Write(req); err != nil {
		_ = s.Reset()
		return 0, 0, err
	}
	if err := s.CloseWrite(); err != nil {
		_ = s.Reset()
		return 0, 0, err
	}
	data, err := readCapped(s, MaxSyncBytes)
	var resp syncResponse
	if err == nil {
		if err = syncDecMode.Unmarshal(data, &resp); err != nil {
			err = fmt.Errorf("%w: %w", ErrBadSync, err)
		}
	}
	if err != nil {
		if errors.Is(err, ErrBadSync) { // a transport error is no rejection
			d.rejected.Add(1)
		}
		_ = s.Reset()
		return 0, 0, err
	}
	for _, sa := range resp.Ads {
		ad, err := d.verifyRelayed(sa.Data, p)
		if err != nil {
			d.rejected.Add(1)
			continue
		}
		if ad == nil {
			continue
		}
		ttl := min(time.Duration(sa.TTLSeconds), time.Duration(ad.TTLSeconds)) * time.Second
		if ok, isNew := d.store(ad, sa.Data, ttl, true, p); ok {
			stored++
			if isNew {
				added++
			}
		}
	}
	return stored, added, nil
}

// verifyRelayed verifies an advertisement that reached us through another
// peer than its origin: the signature must be that of the peer it
// describes. It returns nil and no error for a valid-looking one that would
// not replace what we hold, or that a narrow directory would not keep
// from peer from (its signature is not checked).
func (d *Directory) verifyRelayed(data []byte, from libp2ppeer.ID) (*Advertisement, error) {
	ad, body, sig, err := decodeAd(data)
	if err != nil {
		return nil, err
	}
	id, err := libp2ppeer.IDFromBytes(ad.Peer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	if !d.fresh(id, ad, from) {
		return nil, nil
	}
	return ad, checkAd(ad, body, sig, id)
}
