package discovery

import (
	"context"
	"errors"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// The answering side of the directory exchange: at most syncServing
// answers at once, one per asking peer.

// serveSync answers one request. libp2p runs it on its own goroutine; it
// joins the directory's WaitGroup so that Close waits for it, and at most
// syncServing run at once, one per peer (a peer that opened several and
// trickles their bytes would take every slot from the others).
func (d *Directory) serveSync(s network.Stream) {
	asker := s.Conn().RemotePeer()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		_ = s.Reset()
		return
	}
	if d.answering[asker] {
		d.mu.Unlock()
		d.syncBusy.Add(1)
		_ = s.Reset()
		return
	}
	if d.answering == nil {
		d.answering = make(map[libp2ppeer.ID]bool)
	}
	d.answering[asker] = true
	d.wg.Add(1)
	d.mu.Unlock()
	// The peer's mark goes before the stream ends: the peer may send its
	// next request as soon as it sees the end.
	marked := true
	unmark := func() {
		if marked {
			marked = false
			d.mu.Lock()
			delete(d.answering, asker)
			d.mu.Unlock()
		}
	}
	defer func() {
		unmark()
		d.wg.Done()
	}()
	select {
	case d.serving <- struct{}{}:
		defer func() { <-d.serving }()
	default:
		d.syncBusy.Add(1)
		unmark()
		_ = s.Reset()
		return
	}
	_ = s.SetDeadline(time.Now().Add(syncTimeout))
	stop := context.AfterFunc(d.ctx, func() { _ = s.Reset() }) // Close does not wait for the deadline
	defer stop()
	data, err := readCapped(s, maxSyncRequest)
	if err != nil && !errors.Is(err, ErrBadSync) {
		unmark()
		_ = s.Reset() // a transport error is no rejection
		return
	}
	var req syncRequest
	if err == nil {
		err = syncDecMode.Unmarshal(data, &req)
	}
	if err == nil && req.Own != nil {
		var ad *Advertisement
		if ad, err = Verify(req.Own, asker); err == nil {
			d.store(ad, req.Own, d.ttl(ad), false, asker)
		}
	}
	if err != nil {
		d.rejected.Add(1)
		d.cfg.Logger.Debug("discovery: bad directory request", "from", asker, "err", err)
		unmark()
		_ = s.Reset()
		return
	}
	resp, err := cbor.Marshal(d.answer(asker, req.Have, req.Only))
	if err == nil {
		_, err = s.Write(resp)
	}
	if err != nil {
		unmark()
		_ = s.Reset()
		return
	}
	unmark()
	_ = s.Close()
}

// answer selects what the asker lacks: our own advertisement and those we
// hold that are missing from its summary or newer than it holds (of the
// same incarnation: the asker keeps what it holds of another), within the
// exchange's limits; only ours when only.
func (d *Directory) answer(asker libp2ppeer.ID, have []haveEntry, only bool) syncResponse {
	known := make(map[string]haveEntry, len(have))
	for _, h := range have {
		known[string(h.Peer)] = h
	}
	newer := func(ad *Advertisement) bool {
		h, ok := known[string(ad.Peer)]
		return !ok || h.Incarnation == ad.Incarnation && h.Seq < ad.Seq
	}
	var resp syncResponse
	size := 0
	add := func(ad *Advertisement, raw []byte, left time.Duration) bool {
		if len(resp.Ads) == MaxSyncAds || size+len(raw)+16 > MaxSyncBytes {
			return false
		}
		size += len(raw) + 16
		resp.Ads = append(resp.Ads, syncAd{Data: raw, TTLSeconds: uint32(max(left, time.Second) / time.Second)})
		return true
	}
	if own := d.own.Load(); own != nil && newer(own.ad) {
		add(own.ad, own.raw, d.cfg.TTL)
	}
	if only {
		return resp
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, e := range d.peers {
		if id == asker || !newer(e.ad) || now.After(e.expires) {
			continue
		}
		if !add(e.ad, e.raw, e.expires.Sub(now)) {
			break
		}
	}
	return resp
}
