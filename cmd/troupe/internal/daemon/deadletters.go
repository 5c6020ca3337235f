package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/meshview"
	"github.com/troupe-mesh/troupe/codec"
)

// Dead letters as data: the daemon's actor system remembers the latest
// ones (actor.WithDeadLetterLog, config dead_letters.keep); 'troupe
// deadletters' lists them or follows new ones over the control socket,
// GET /api/deadletters serves them to the mesh view. Records hold no
// message bodies; their text is cleaned before it reaches a terminal.

// maxFollowBatch caps the records written per wake-up of a follower; the
// rest come at the next one (the ring holds them or they are gone, and
// the gap in seq says how many were missed).
const maxFollowBatch = 256

// describeMessage is the dead-letter log's describe: the registered type
// name and the body's size (a Raw's as it came, others' as encoded).
func describeMessage(reg *codec.Registry) func(any) (string, int) {
	return func(msg any) (string, int) {
		if raw, ok := msg.(codec.Raw); ok {
			if raw.Body == nil {
				return raw.Type, -1 // refused before its body was read
			}
			return raw.Type, len(raw.Body)
		}
		if name, n, ok := reg.BodySize(msg); ok {
			return name, n
		}
		if name, body, err := reg.Encode(msg); err == nil {
			return name, len(body)
		}
		return "", -1 // actor names its Go type
	}
}

// toDeadLetters turns records into their JSON form, cleaned.
func toDeadLetters(rs []actor.DeadLetterRecord) []control.DeadLetter {
	out := make([]control.DeadLetter, 0, len(rs))
	for _, r := range rs {
		e := control.DeadLetter{Seq: r.Seq, Time: r.Time.UTC(), To: cli.Clean(r.To.String()), Type: cli.Clean(r.Type), Size: r.Size, Kind: cli.Clean(r.Kind), Reason: cli.Clean(r.Reason)}
		if !r.From.IsZero() {
			e.From, e.FromPeer = cli.Clean(r.From.String()), cli.Clean(r.From.Peer())
		}
		out = append(out, e)
	}
	return out
}

// deadLetters answers a deadletters request: the latest count (all kept
// when 0) above seq after.
func (d *Daemon) deadLetters(count int, after uint64) control.DeadLettersResult {
	sys := d.node.System()
	rs, _ := sys.RecentDeadLetters(after)
	if count > 0 && len(rs) > count {
		rs = rs[len(rs)-count:]
	}
	r := control.DeadLettersResult{Total: sys.DeadLetters(), ByKind: sys.DeadLettersByKind(), Kept: d.cfg.DeadLetters.Keep}
	r.Recent, r.Omitted = fitDeadLetters(toDeadLetters(rs), maxDeadLettersAnswer)
	return r
}

// maxDeadLettersAnswer caps the bytes of records in one answer, well
// below what a client takes (maxResponse): at the largest keep, other
// peers' texts (long names, reasons of '<'s that JSON escapes) could
// make the records kept weigh hundreds of MiB as JSON.
const maxDeadLettersAnswer = 8 << 20

// fitDeadLetters returns the latest of es whose JSON fits in budget
// bytes, and how many older ones it left out.
func fitDeadLetters(es []control.DeadLetter, budget int) ([]control.DeadLetter, int) {
	i := len(es)
	for ; i > 0; i-- {
		b, _ := json.Marshal(es[i-1]) // escaped, as the mesh view's API writes it
		if budget -= len(b) + 1; budget < 0 {
			break
		}
	}
	return es[i:], i
}

// followDeadLetters answers a deadletters request with follow: after the
// response (the ones kept now), each new record is one JSON line on conn
// until the client goes away, ctx ends (the daemon stops) or a write
// takes longer than meshview.WriteTimeout.
func (d *Daemon) followDeadLetters(ctx context.Context, req control.Request, conn net.Conn) (any, func(), error) {
	first := d.deadLetters(req.Count, 0)
	after := uint64(0)
	if n := len(first.Recent); n > 0 {
		after = first.Recent[n-1].Seq
	}
	stream := func() {
		ctx, cancel := context.WithCancel(ctx)
		gone := make(chan struct{})
		go func() { // the client sends nothing more: a read ends when it goes
			defer close(gone)
			_, _ = io.Copy(io.Discard, conn)
			cancel()
		}()
		defer func() {
			cancel()
			_ = conn.SetReadDeadline(time.Now()) // ends the read above
			<-gone
		}()
		w := bufio.NewWriter(conn)
		for {
			rs, wait := d.node.System().RecentDeadLetters(after)
			if len(rs) > maxFollowBatch {
				rs = rs[:maxFollowBatch]
			}
			// Before the first Write: past 4 KiB, a Write flushes too,
			// and the deadline of the last batch may be long gone.
			_ = conn.SetWriteDeadline(time.Now().Add(meshview.WriteTimeout))
			for _, e := range toDeadLetters(rs) {
				after = e.Seq
				b, _ := cli.MarshalJSON(e)
				_, _ = w.Write(append(b, '\n'))
			}
			if err := w.Flush(); err != nil {
				return
			}
			if len(rs) == maxFollowBatch {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-wait:
			}
		}
	}
	return first, stream, nil
}
