package main

// The raw libp2p stream baseline (rawSys): an echo, a sink and a client
// over plain streams, with no actors.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
)

// rawEcho echoes 101-byte frames (a length byte of 100 and the body).
func rawEcho(s network.Stream) {
	defer s.Close()
	buf := make([]byte, 1+remoteBody)
	for {
		if _, err := io.ReadFull(s, buf); err != nil {
			return
		}
		if _, err := s.Write(buf); err != nil {
			_ = s.Reset()
			return
		}
	}
}

// rawSink reads runs until the stream ends: a count (8 bytes), then that
// many 101-byte frames carrying their sequence number; it answers each run
// with the count of frames in order (and stops after a run out of order).
func rawSink(s network.Stream) {
	defer s.Close()
	r := bufio.NewReaderSize(s, 64<<10)
	var hdr [8]byte
	buf := make([]byte, 1+remoteBody)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		total := binary.LittleEndian.Uint64(hdr[:])
		var got uint64
		for got < total {
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			if buf[0] != remoteBody || binary.LittleEndian.Uint64(buf[1:]) != got {
				break
			}
			got++
		}
		binary.LittleEndian.PutUint64(hdr[:], got)
		if _, err := s.Write(hdr[:]); err != nil || got != total {
			return
		}
	}
}

// rawClient runs the raw libp2p baseline: request-reply over one stream, or
// framed one-way writes through a 64 KiB buffer (the warm-up and the
// measured run on one stream).
func rawClient(listen, addr, work string, total, warm int) (res remoteResult, err error) {
	n, server, err := dialTroupe(listen, addr)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, closeNode(n)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch work {
	case "ask":
		s, err := n.Host().NewStream(ctx, server, rawEchoProto)
		if err != nil {
			return res, err
		}
		defer s.Close()
		out, in := make([]byte, 1+remoteBody), make([]byte, 1+remoteBody)
		out[0] = remoteBody
		lat := make([]time.Duration, 0, total)
		for i := -1; i < total; i++ { // -1: warm-up
			binary.LittleEndian.PutUint64(out[1:], uint64(i))
			t0 := time.Now()
			if _, err := s.Write(out); err != nil {
				return res, err
			}
			if _, err := io.ReadFull(s, in); err != nil {
				return res, err
			}
			if i >= 0 {
				lat = append(lat, time.Since(t0))
			}
			if binary.LittleEndian.Uint64(in[1:]) != uint64(i) {
				return res, fmt.Errorf("echo %d: wrong frame", i)
			}
		}
		res.P50, res.P99 = percentiles(lat)
	case "oneway":
		s, err := n.Host().NewStream(ctx, server, rawSinkProto)
		if err != nil {
			return res, err
		}
		defer s.Close()
		w := bufio.NewWriterSize(s, 64<<10)
		frame := make([]byte, 1+remoteBody)
		frame[0] = remoteBody
		run := func(total int) error {
			var hdr [8]byte
			binary.LittleEndian.PutUint64(hdr[:], uint64(total))
			_, _ = w.Write(hdr[:])
			for i := range total {
				binary.LittleEndian.PutUint64(frame[1:], uint64(i))
				if _, err := w.Write(frame); err != nil {
					return err
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if _, err := io.ReadFull(s, hdr[:]); err != nil {
				return err
			}
			if got := binary.LittleEndian.Uint64(hdr[:]); got != uint64(total) {
				return fmt.Errorf("raw one-way: %d of %d frames in order", got, total)
			}
			return nil
		}
		if warm > 0 {
			if err := run(warm); err != nil {
				return res, fmt.Errorf("warm-up: %w", err)
			}
		}
		t0 := workloadStart()
		if err := run(total); err != nil {
			return res, err
		}
		workloadEnd(&res, total, t0)
	default:
		return res, fmt.Errorf("unknown workload %q", work)
	}
	return res, nil
}
