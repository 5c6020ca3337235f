package routing

import (
	"bytes"
	"errors"
	"testing"

	"github.com/troupe-mesh/troupe/codec"
)

// A reader's reassembly alone (largeIn.next, keep, whole): fragments in,
// what the reader does out, no stream, no router, no budget. The reader
// driving it is tested in large_test.go, against a model in
// large_fuzz_test.go.

// fragIn is one fragment of a scenario: its envelope's target and
// correlation, the fragment, and what next says of it.
type fragIn struct {
	to   string
	corr uint64
	f    fragmentBody
	want fragStep
	bad  bool // next returns an error (errFragments)
}

func fragData(n int) []byte { return bytes.Repeat([]byte{7}, n) }

func firstFrag(total, n int) fragmentBody {
	return fragmentBody{Type: "bytes", Total: uint64(total), Data: fragData(n)}
}

func moreFrag(n int) fragmentBody { return fragmentBody{Data: fragData(n)} }

func TestReassemblyScenarios(t *testing.T) {
	const maxFrame = 1000
	for _, sc := range []struct {
		name   string
		frags  []fragIn
		active bool            // a message is left unfinished
		whole  *codec.Envelope // the message completed last (nil: none), without its body
	}{
		{"two fragments make a message", []fragIn{
			{to: "t", f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
			{to: "t", f: moreFrag(4), want: fragStep{keep: true, reserve: 4, whole: true}},
		}, false, &codec.Envelope{Kind: codec.KindUser, To: "t", Type: "bytes"}},
		{"a reply in one fragment", []fragIn{
			{to: "t", corr: 3, f: fragmentBody{Type: "bytes", Reply: true, Total: 5, Data: fragData(5)}, want: fragStep{began: true, keep: true, reserve: 5, whole: true}},
		}, false, &codec.Envelope{Kind: codec.KindReply, To: "t", Type: "bytes", Corr: 3}},
		{"the buffer doubles: it reserves what arrived, at most twice over", []fragIn{
			{to: "t", f: firstFrag(100, 10), want: fragStep{began: true, keep: true, reserve: 10}},
			{to: "t", f: moreFrag(10), want: fragStep{keep: true, reserve: 10}},
			{to: "t", f: moreFrag(10), want: fragStep{keep: true, reserve: 20}},
			{to: "t", f: moreFrag(10), want: fragStep{keep: true}},
			{to: "t", f: moreFrag(10), want: fragStep{keep: true, reserve: 40}},
			{to: "t", f: moreFrag(30), want: fragStep{keep: true}},
			{to: "t", f: moreFrag(20), want: fragStep{keep: true, reserve: 20, whole: true}},
		}, false, &codec.Envelope{Kind: codec.KindUser, To: "t", Type: "bytes"}},
		{"over the maximum frame: refused, its data counted and dropped", []fragIn{
			{to: "t", f: firstFrag(1500, 1000), want: fragStep{began: true, refuse: true, drop: true}},
			{to: "t", f: moreFrag(500), want: fragStep{drop: true}},
			{to: "t", f: firstFrag(10, 10), want: fragStep{began: true, keep: true, reserve: 10, whole: true}}, // the next one begins afresh
		}, false, &codec.Envelope{Kind: codec.KindUser, To: "t", Type: "bytes"}},
		{"over the maximum frame in one fragment", []fragIn{
			{to: "t", f: firstFrag(1500, 1500), want: fragStep{began: true, refuse: true, drop: true}},
		}, false, nil},
		{"a message left unfinished", []fragIn{
			{to: "t", f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
		}, true, nil},
		{"a continuation first", []fragIn{{to: "t", f: moreFrag(5), bad: true}}, false, nil},
		{"a new message before the last ended", []fragIn{
			{to: "t", f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
			{to: "t", f: firstFrag(10, 6), bad: true},
		}, true, nil},
		{"a first fragment without a type", []fragIn{{to: "t", f: fragmentBody{Total: 10, Data: fragData(5)}, bad: true}}, false, nil},
		{"a first fragment without a length", []fragIn{{to: "t", f: fragmentBody{Type: "bytes", Data: fragData(5)}, bad: true}}, false, nil},
		{"longer than any maximum frame", []fragIn{{to: "t", f: firstFrag(codec.MaxFrameLimit+1, 5), bad: true}}, false, nil},
		{"an empty fragment", []fragIn{
			{to: "t", f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
			{to: "t", f: moreFrag(0), bad: true},
		}, true, nil},
		{"more than announced", []fragIn{
			{to: "t", f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
			{to: "t", f: moreFrag(5), bad: true},
		}, true, nil},
		{"a continuation for another target", []fragIn{
			{to: "t", f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
			{to: "u", f: moreFrag(4), bad: true},
		}, true, nil},
		{"a continuation for another request", []fragIn{
			{to: "t", corr: 1, f: firstFrag(10, 6), want: fragStep{began: true, keep: true, reserve: 6}},
			{to: "t", corr: 2, f: moreFrag(4), bad: true},
		}, true, nil},
		{"a first fragment over the maximum is refused, then found bad", []fragIn{
			{to: "t", f: firstFrag(1500, 0), want: fragStep{began: true, refuse: true}, bad: true},
		}, true, nil},
	} {
		t.Run(sc.name, func(t *testing.T) {
			var lg largeIn
			var whole *codec.Envelope
			kept := 0
			for i, fr := range sc.frags {
				env := codec.Envelope{Kind: codec.KindSystem, Type: typeFragment, To: fr.to, FromName: "s", Corr: fr.corr}
				got, err := lg.next(&env, fr.f, maxFrame)
				if got != fr.want || (err != nil) != fr.bad || err != nil && !errors.Is(err, errFragments) {
					t.Fatalf("fragment %d: %+v, error %v; want %+v, an error: %v", i, got, err, fr.want, fr.bad)
				}
				if err != nil {
					break
				}
				if got.began {
					kept = 0
				}
				if got.refuse && (lg.env.To != fr.to || lg.total != int(fr.f.Total)) {
					t.Fatalf("fragment %d: refusing %+v of %d bytes, want to %s of %d", i, lg.env, lg.total, fr.to, fr.f.Total)
				}
				if got.drop {
					lg.drop(len(fr.f.Data))
				}
				if got.keep {
					lg.keep(fr.f.Data)
					kept += len(fr.f.Data)
				}
				if got.whole {
					m := lg.whole()
					if len(m.Body) != kept || cap(m.Body) != kept {
						t.Fatalf("fragment %d: a body of %d bytes (capacity %d), want %d", i, len(m.Body), cap(m.Body), kept)
					}
					whole = &m
				}
			}
			if lg.active != sc.active {
				t.Fatalf("left active: %v, want %v", lg.active, sc.active)
			}
			switch {
			case (whole == nil) != (sc.whole == nil):
				t.Fatalf("completed %+v, want %+v", whole, sc.whole)
			case whole != nil:
				w := sc.whole
				if whole.Kind != w.Kind || whole.To != w.To || whole.FromName != "s" || whole.Type != w.Type || whole.Corr != w.Corr {
					t.Fatalf("completed %+v, want %+v from s", *whole, *w)
				}
			}
		})
	}
}
