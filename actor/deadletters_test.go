package actor

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestDeadLetterLogKeepsTheLatestWithoutBodies(t *testing.T) {
	s := newSys(t, WithDeadLetterLog(3, func(msg any) (string, int) {
		return "test.msg", len(msg.(string))
	}))
	ghost, _ := NewRef(s.Peer(), "ghost")
	for i := range 5 {
		s.Send(ghost, strings.Repeat("x", i))
	}
	got, _ := s.RecentDeadLetters(0)
	if len(got) != 3 {
		t.Fatalf("%d records, want the latest 3: %+v", len(got), got)
	}
	for i, r := range got {
		if r.Seq != uint64(i+3) || r.Size != i+2 || r.Type != "test.msg" || r.To != ghost || !r.From.IsZero() ||
			r.Kind != "no such actor" || r.Reason != ErrNoSuchActor.Error() || r.Time.IsZero() {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if later, _ := s.RecentDeadLetters(4); len(later) != 1 || later[0].Seq != 5 {
		t.Fatalf("after 4: %+v", later)
	}
	if k := s.DeadLettersByKind(); k["no such actor"] != 5 || len(k) != 1 {
		t.Fatalf("by kind: %v", k)
	}
}

func TestDeadLetterLogWakesAFollower(t *testing.T) {
	s := newSys(t)
	got, wait := s.RecentDeadLetters(0)
	if len(got) != 0 {
		t.Fatalf("records before any dead letter: %+v", got)
	}
	select {
	case <-wait:
		t.Fatal("woken with nothing new")
	default:
	}
	far, _ := ParseRef("otherpeer/x")
	s.Send(far, 42)
	recv(t, wait)
	got, _ = s.RecentDeadLetters(0)
	if len(got) != 1 || got[0].Type != "int" || got[0].Size != -1 || got[0].Kind != "no route" {
		t.Fatalf("records: %+v", got)
	}
}

func TestDeadLetterLogBoundsWhatOthersControl(t *testing.T) {
	long := strings.Repeat("é", 500)
	s := newSys(t, WithDeadLetterLog(DefaultDeadLetterKeep, func(any) (string, int) { return long, 1 }))
	ghost, _ := NewRef(s.Peer(), "ghost")
	// Reasons of many kinds, as a remote peer could send: the counts stay bounded.
	for i := range 3 * maxReasonKinds {
		s.deadLetter(DeadLetter{To: ghost, Msg: "m", Reason: fmt.Errorf("%w (remote: %s)", errors.New(fmt.Sprint("kind ", i, long)), "x")})
	}
	got, _ := s.RecentDeadLetters(0)
	r := got[len(got)-1]
	if len(r.Type) > maxRecordText+len("…") || len(r.Reason) > maxRecordText+len("…") || len(r.Kind) > maxRecordText+len("…") {
		t.Fatalf("record holds %d, %d, %d bytes of text", len(r.Type), len(r.Reason), len(r.Kind))
	}
	k := s.DeadLettersByKind()
	if len(k) > maxReasonKinds+1 || k[otherReasonKind] != 2*maxReasonKinds {
		t.Fatalf("%d kinds, other %d", len(k), k[otherReasonKind])
	}
}

func TestDeadLetterKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{ErrNoSuchActor, "no such actor"},
		{fmt.Errorf("%w: %q", ErrUnknownType, "a.b"), "message of an unknown type"},
		{fmt.Errorf("wrapped: %w", fmt.Errorf("%w (remote: x)", ErrMailboxFull)), DeadLetterKind(ErrMailboxFull)},
		{errors.New("plain words: here"), "plain words: here"},
		{fmt.Errorf("%w: peer X: %w", errors.New("routing: peer unreachable"), errors.New("dial failed")), "peer unreachable"},
	} {
		if got := DeadLetterKind(c.err); got != c.want {
			t.Errorf("DeadLetterKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if strings.Contains(DeadLetterKind(ErrMailboxFull), "actor:") {
		t.Errorf("kind keeps the package prefix: %q", DeadLetterKind(ErrMailboxFull))
	}
}

func TestDeadLetterLogOff(t *testing.T) {
	s := newSys(t, WithDeadLetterLog(0, nil))
	ghost, _ := NewRef(s.Peer(), "ghost")
	s.Send(ghost, 1)
	if got, _ := s.RecentDeadLetters(0); len(got) != 0 || s.DeadLettersByKind()["no such actor"] != 1 {
		t.Fatalf("records %+v, kinds %v", got, s.DeadLettersByKind())
	}
	if _, err := New(WithDeadLetterLog(-1, nil)); err == nil {
		t.Fatal("a negative keep was taken")
	}
}

// BenchmarkDeadLetter: what the log adds to a dead letter (keep 0
// remembers none but still counts per kind).
func BenchmarkDeadLetter(b *testing.B) {
	for _, keep := range []int{DefaultDeadLetterKeep, 0, DefaultDeadLetterKeep} {
		b.Run(fmt.Sprintf("keep=%d", keep), func(b *testing.B) {
			s := newSys(b, WithDeadLetterLog(keep, nil))
			ghost, _ := NewRef(s.Peer(), "ghost")
			b.ReportAllocs()
			for b.Loop() {
				s.Send(ghost, 1)
			}
		})
	}
}

// unhashableError is an error whose value cannot be a map key.
type unhashableError struct{ parts []string }

func (e unhashableError) Error() string { return "parts" }

// TestDeadLetterLogTakesAnyReason: a reason of any type (one that cannot
// be hashed, one of another peer's long texts) is recorded, again and
// again, without a panic.
func TestDeadLetterLogTakesAnyReason(t *testing.T) {
	s := newSys(t)
	ghost, _ := NewRef(s.Peer(), "ghost")
	for range 3 {
		s.deadLetter(DeadLetter{To: ghost, Msg: 1, Reason: unhashableError{parts: []string{"a"}}})
		s.deadLetter(DeadLetter{To: ghost, Msg: 1, Reason: errors.New(strings.Repeat("x", 1000))})
	}
	got, _ := s.RecentDeadLetters(0)
	if len(got) != 6 || got[0].Kind != "parts" || got[5].Reason == "" {
		t.Fatalf("records: %+v", got)
	}
}

// TestTruncateTextKeepsTextBeforeABadByte: another peer's text with an
// invalid byte early on is cut at the cap, not emptied.
func TestTruncateTextKeepsTextBeforeABadByte(t *testing.T) {
	s := "ab\xffcd" + strings.Repeat("é", maxRecordText)
	got := truncateText(s)
	if !strings.HasPrefix(got, "ab\xffcd") || len(got) < maxRecordText-1 || len(got) > maxRecordText+len("…") {
		t.Fatalf("truncateText cut %d bytes to %q", len(s), got)
	}
	if got := strings.TrimSuffix(truncateText(strings.Repeat("é", maxRecordText)), "…"); !utf8.ValidString(got) {
		t.Fatalf("cut in a rune: %q", got)
	}
}

// TestDeadLetterLogConcurrentAdds: dead letters found on several
// goroutines at once (links' writers, loops) are all counted, the latest
// kept, with no data race.
func TestDeadLetterLogConcurrentAdds(t *testing.T) {
	const keep, workers, each = 512, 4, 200 // appends and overwrites
	s := newSys(t, WithDeadLetterLog(keep, nil))
	ghost, _ := NewRef(s.Peer(), "ghost")
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				s.deadLetter(DeadLetter{To: ghost, Msg: 1, Reason: ErrNoSuchActor})
			}
		})
	}
	wg.Wait()
	got, _ := s.RecentDeadLetters(0)
	if len(got) != keep || got[keep-1].Seq != workers*each || s.DeadLettersByKind()["no such actor"] != workers*each {
		t.Fatalf("%d kept (last %+v), kinds %v", len(got), got[len(got)-1], s.DeadLettersByKind())
	}
}
