package routing

import (
	"bytes"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/codec"
)

// steadyStream is a stream to a peer that reads rate bytes per second (0:
// nothing), with a write deadline as a real stream's.
type steadyStream struct {
	network.Stream
	rate     int
	deadline time.Time
	got      int
}

func (s *steadyStream) SetWriteDeadline(t time.Time) error { s.deadline = t; return nil }

func (s *steadyStream) Write(p []byte) (int, error) {
	need := time.Duration(len(p)) * time.Second / time.Duration(max(s.rate, 1))
	if s.rate == 0 {
		need = time.Hour
	}
	if !s.deadline.IsZero() && time.Now().Add(need).After(s.deadline) {
		left := max(time.Until(s.deadline), 0)
		time.Sleep(left)
		n := min(len(p), int(left.Seconds()*float64(s.rate)))
		s.got += n
		return n, os.ErrDeadlineExceeded
	}
	time.Sleep(need)
	s.got += len(p)
	return len(p), nil
}

// A peer that reads slowly but steadily takes a batch that lasts longer
// than writeTimeout: the deadline bounds a stall, not the batch. One that
// stops reading breaks the stream within writeTimeout; a caller's deadline
// is kept as it is.
func TestSlowSteadyPeerIsNotGivenUp(t *testing.T) {
	write := func(s *steadyStream, caller time.Time, messages int) error {
		pw := &progressWriter{s: s}
		fw := codec.NewFrameWriter(pw, codec.DefaultMaxFrame)
		pw.arm(caller)
		body := bytes.Repeat([]byte{'x'}, 40<<10)
		for range messages {
			if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "sink", Type: "blob", Body: body}); err != nil {
				return err
			}
		}
		return fw.Flush()
	}
	synctest.Test(t, func(t *testing.T) {
		s := &steadyStream{rate: 1 << 20} // 1 MiB/s: 1,024 messages of 40 KiB take 40 s
		start := time.Now()
		if err := write(s, time.Time{}, 1024); err != nil {
			t.Fatalf("a steady peer given up after %v, %d bytes read: %v", time.Since(start), s.got, err)
		}
		if took := time.Since(start); took < writeTimeout {
			t.Fatalf("the batch took %v: not longer than writeTimeout, the test shows nothing", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := &steadyStream{rate: 0} // reads nothing
		start := time.Now()
		if err := write(s, time.Time{}, 16); err == nil {
			t.Fatal("a peer that reads nothing took the batch")
		}
		if took := time.Since(start); took < writeTimeout/2 || took > writeTimeout {
			t.Fatalf("a stalled peer given up after %v, want within writeTimeout", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := &steadyStream{rate: 1 << 20}
		start := time.Now()
		if err := write(s, start.Add(time.Second), 1024); err == nil {
			t.Fatal("a caller's deadline of 1 s let a 40 s batch through")
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("a caller's deadline of 1 s ended the write after %v", took)
		}
	})
}
