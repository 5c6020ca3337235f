package routing

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/troupe-mesh/troupe/codec"
)

// fuzzFrame is one frame of FuzzFragments: a fragment or a small message.
type fuzzFrame struct {
	env   codec.Envelope
	frag  fragmentBody
	small bool
}

// fuzzFrames turns fuzz input into frames: per frame one byte of kind and
// flags, then two bytes of announced length and two of data length.
func fuzzFrames(data []byte, maxFrame int) []fuzzFrame {
	var out []fuzzFrame
	for len(data) >= 5 {
		op, total, n := data[0], binary.LittleEndian.Uint16(data[1:]), binary.LittleEndian.Uint16(data[3:])
		data = data[5:]
		env := codec.Envelope{Kind: codec.KindSystem, To: "u0", FromName: "f", Type: typeFragment, Corr: uint64(op>>7) * 9}
		if op&0x40 != 0 {
			env.To = "u1"
		}
		body := bytes.Repeat([]byte{op}, int(n)%700)
		switch op % 4 {
		case 0: // a first fragment, at times without type or length
			f := fragmentBody{Type: "x.blob", Total: uint64(int(total) % (maxFrame + 100)), Reply: op&4 != 0, Data: body}
			if op&8 != 0 {
				f.Type = ""
			}
			out = append(out, fuzzFrame{env: env, frag: f})
		case 1, 2: // a continuation
			out = append(out, fuzzFrame{env: env, frag: fragmentBody{Data: body}})
		case 3: // a small message between fragments
			env.Kind, env.Type = codec.KindUser, "x.small"
			out = append(out, fuzzFrame{env: env, small: true})
		}
	}
	return out
}

// fragmentModel is what the reader must do with a sequence of fragments.
type fragmentModel struct {
	active    bool
	skip      bool // over the maximum frame: refused, its data dropped
	to        string
	corr      uint64
	total, at int
	refused   int // messages refused for their size so far
}

// step takes one fragment and reports whether it completes a message (not
// one refused for its size) and whether it is an error.
func (m *fragmentModel) step(env *codec.Envelope, f fragmentBody, maxFrame int) (complete, bad bool) {
	if f.Type != "" || f.Total != 0 || f.Reply {
		if m.active || f.Type == "" || f.Total == 0 {
			return false, true
		}
		*m = fragmentModel{active: true, skip: f.Total > uint64(maxFrame), to: env.To, corr: env.Corr, total: int(f.Total), refused: m.refused}
		if m.skip {
			m.refused++
		}
	} else if !m.active || env.To != m.to || env.Corr != m.corr {
		return false, true
	}
	if len(f.Data) == 0 || len(f.Data) > m.total-m.at {
		return false, true
	}
	if m.at += len(f.Data); m.at < m.total {
		return false, false
	}
	skipped := m.skip
	*m = fragmentModel{refused: m.refused}
	return !skipped, false
}

// FuzzFragments: random sequences of first fragments, continuations and
// small messages, through the reader's fragment state machine one at a
// time and through its read loop as one stream. The reader never panics,
// never buffers more than the announced length or the maximum frame,
// completes a message exactly when its data adds up, refuses a message
// longer than the maximum frame by itself (counted, its data dropped), and
// refuses (the stream is reset) exactly the sequences that do not add up,
// a stream ending inside a message included. (Run it with -fuzzminimizetime 3s:
// minimizing a long input takes the default minute without executions.)
func FuzzFragments(f *testing.F) {
	const maxFrame = 2048
	lb := newLoopback(f, maxFrame)
	le := func(op byte, total, n uint16) []byte {
		return []byte{op, byte(total), byte(total >> 8), byte(n), byte(n >> 8)}
	}
	f.Add(append(le(0, 1000, 600), le(1, 0, 400)...))                                // a message in two
	f.Add(append(append(le(0, 1000, 600), le(3, 0, 0)...), le(1, 0, 400)...))        // and a small one between
	f.Add(append(le(0, 1000, 600), le(1, 0, 500)...))                                // too much
	f.Add(append(le(0, 2048, 100), le(0, 100, 100)...))                              // two firsts
	f.Add(append(le(0, 1000, 600), le(0x41, 0, 400)...))                             // another target
	f.Add(append(le(0, 1000, 600), le(1, 0, 0)...))                                  // empty
	f.Add(le(1, 0, 5))                                                               // no first
	f.Add(le(8, 300, 5))                                                             // no type
	f.Add(append(append(le(4, 1000, 600), le(5, 0, 400)...), le(0x84, 900, 699)...)) // a reply, then one left open
	f.Fuzz(func(t *testing.T, data []byte) {
		frames := fuzzFrames(data, maxFrame)

		// One at a time through the state machine.
		in := inbound{r: lb.r, remote: lb.h.ID(), remoteStr: lb.h.ID().String(), out: lb.r.sys.NewInbound(), v11: true}
		defer in.out.Close()
		var model fragmentModel
		completed, smalls, bad := 0, 0, false
		refusedBefore := lb.r.tooLargeIn.Load()
		for i := range frames {
			fr := &frames[i]
			if fr.small {
				smalls++
				continue
			}
			before := in.received + lb.r.decodeErrors.Load()
			err := in.fragment(&fr.env, fr.frag)
			complete, wantBad := model.step(&fr.env, fr.frag, maxFrame)
			if (err != nil) != wantBad {
				t.Fatalf("frame %d %+v (data %d): error %v, want an error: %v", i, fr.frag.Type, len(fr.frag.Data), err, wantBad)
			}
			if wantBad {
				bad = true
				break
			}
			if got := in.received + lb.r.decodeErrors.Load() - before; got != 0 && !complete || got != 1 && complete {
				t.Fatalf("frame %d: %d messages completed, want complete: %v", i, got, complete)
			}
			if complete {
				completed++
			}
			if lg := &in.large; len(lg.buf) > lg.total || cap(lg.buf) > maxFrame || lg.skip && cap(lg.buf) > 0 || lg.active != model.active {
				t.Fatalf("frame %d: %d bytes (capacity %d) of %d buffered, active %v, skipped %v", i, len(lg.buf), cap(lg.buf), lg.total, lg.active, lg.skip)
			}
			if got := int(lb.r.tooLargeIn.Load() - refusedBefore); got != model.refused {
				t.Fatalf("frame %d: %d messages refused for their size, want %d", i, got, model.refused)
			}
		}

		// All at once through the read loop.
		var stream bytes.Buffer
		fw := codec.NewFrameWriter(&stream, 4*maxFrame, codec.WithCompact(true))
		for _, fr := range frames {
			env := fr.env
			var err error
			if fr.small {
				_, env.Body, err = lb.reg.Encode("small")
			} else {
				_, env.Body, err = lb.reg.Encode(fr.frag)
			}
			if err == nil {
				err = fw.WriteEnvelope(&env)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
		before := lb.r.Stats()
		err := lb.read(stream.Bytes())
		if wantBad := bad || model.active; (err != nil) != wantBad {
			t.Fatalf("read loop: error %v, want an error: %v", err, wantBad)
		}
		after := lb.r.Stats()
		if got := after.Received + after.DecodeErrors - before.Received - before.DecodeErrors; !bad && !model.active && got != uint64(smalls+completed) {
			t.Fatalf("read loop: %d messages and errors, want %d", got, smalls+completed)
		}
	})
}
