package actor

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultDeadLetterKeep is how many dead letters a System remembers
// (see WithDeadLetterLog).
const DefaultDeadLetterKeep = 256

// Caps on what a dead-letter record holds of text that may come from
// another peer (a type name, a remote reason), and on the reasons counted
// apart: a hostile peer must not make the log keep its bytes nor grow
// the set of reasons without end.
const (
	maxRecordText   = 160
	maxReasonKinds  = 24
	otherReasonKind = "other"
)

// DeadLetterRecord is what a System remembers of a dead letter: who, what
// type, how large and why, never the message itself.
type DeadLetterRecord struct {
	Seq    uint64    // 1 for the first dead letter of the system, then counting up
	Time   time.Time // when it became a dead letter
	To     Ref       // the actor it was addressed to
	From   Ref       // the sender; zero when sent from plain Go code
	Type   string    // the message's type name (cut past 160 bytes)
	Size   int       // bytes of its encoding; -1 when not known
	Kind   string    // the reason's kind: see DeadLetterKind
	Reason string    // the reason's text (cut past 160 bytes)
}

// DeadLetterKind names the kind of a dead letter's reason: the text of
// the innermost error it wraps (through the first of several) without
// its package prefix ("no such actor", "mailbox full", ...), or "" for
// nil. Safe for concurrent use.
func DeadLetterKind(reason error) string {
	if reason == nil {
		return ""
	}
	for {
		next := errors.Unwrap(reason)
		if multi, ok := reason.(interface{ Unwrap() []error }); ok && next == nil {
			if errs := multi.Unwrap(); len(errs) > 0 {
				next = errs[0] // fmt.Errorf("%w: ...: %w", kind, cause): the first says the kind
			}
		}
		if next == nil {
			break
		}
		reason = next
	}
	s := reason.Error()
	if i := strings.Index(s, ": "); i >= 0 && i < 16 && !strings.ContainsAny(s[:i], " ") {
		s = s[i+2:]
	}
	return truncateText(s)
}

// deadLetterLog is a ring of the latest dead letters and a count per
// reason kind. Its methods are safe for concurrent use.
type deadLetterLog struct {
	// Set at construction, read-only after.
	describe func(any) (string, int)
	keep     int // cap(ring), which is not read without mu: append writes ring

	mu     sync.Mutex          // guards the fields below
	texts  map[error][2]string // kind and text of leaf reasons seen (sentinels, mostly), at most maxReasonKinds
	ring   []DeadLetterRecord
	next   int    // where the next record goes in ring
	seq    uint64 // records made so far
	kinds  map[string]uint64
	notify chan struct{} // closed at the next record; nil while nobody waits
}

func newDeadLetterLog(keep int, describe func(any) (string, int)) *deadLetterLog {
	return &deadLetterLog{describe: describe, keep: keep, ring: make([]DeadLetterRecord, 0, keep), kinds: map[string]uint64{}, texts: map[error][2]string{}}
}

// add records d.
func (l *deadLetterLog) add(d DeadLetter) {
	if l.keep == 0 { // only counted: no clock, no describe
		kind := DeadLetterKind(d.Reason)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.seq++
		l.countLocked(kind)
		return
	}
	r := DeadLetterRecord{Time: time.Now(), To: d.To, From: d.From, Size: -1}
	if l.describe != nil {
		r.Type, r.Size = l.describe(d.Msg)
	}
	if r.Type == "" {
		r.Type = typeName(d.Msg)
	}
	r.Type = truncateText(r.Type)
	// A reason that wraps nothing is most often a sentinel, seen again
	// and again: its texts are kept (for a pointer, always hashable; at
	// most maxReasonKinds of them, with short texts, as another peer's
	// may differ each time).
	leaf := d.Reason != nil && errors.Unwrap(d.Reason) == nil && reflect.TypeOf(d.Reason).Kind() == reflect.Pointer
	var cached [2]string
	ok := false
	if leaf {
		l.mu.Lock()
		cached, ok = l.texts[d.Reason]
		l.mu.Unlock()
	}
	switch {
	case ok:
		r.Kind, r.Reason = cached[0], cached[1]
	case d.Reason != nil:
		r.Kind, r.Reason = DeadLetterKind(d.Reason), truncateText(d.Reason.Error())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if leaf && !ok && len(l.texts) < maxReasonKinds && len(r.Reason) <= maxRecordText {
		l.texts[d.Reason] = [2]string{r.Kind, r.Reason}
	}
	l.seq++
	r.Seq = l.seq
	l.countLocked(r.Kind)
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, r)
	} else {
		l.ring[l.next] = r
	}
	l.next = (l.next + 1) % cap(l.ring)
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
}

// countLocked counts a dead letter of kind, as "other" past
// maxReasonKinds kinds.
func (l *deadLetterLog) countLocked(kind string) {
	if _, ok := l.kinds[kind]; !ok && len(l.kinds) >= maxReasonKinds {
		kind = otherReasonKind
	}
	l.kinds[kind]++
}

// since returns the remembered records numbered above after, oldest
// first, and a channel closed at the next record.
func (l *deadLetterLog) since(after uint64) ([]DeadLetterRecord, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []DeadLetterRecord
	n := len(l.ring)
	for i := range n {
		r := l.ring[(l.next-n+i+cap(l.ring))%cap(l.ring)]
		if r.Seq > after {
			out = append(out, r)
		}
	}
	if l.notify == nil {
		l.notify = make(chan struct{})
	}
	return out, l.notify
}

// byKind returns a copy of the counts per reason kind.
func (l *deadLetterLog) byKind() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]uint64, len(l.kinds))
	for k, v := range l.kinds {
		out[k] = v
	}
	return out
}

// RecentDeadLetters returns the dead letters the system remembers (the
// latest WithDeadLetterLog keeps) numbered above after, oldest first, and
// a channel closed when the next one is recorded: a follower calls it
// again with the last Seq it saw once the channel is closed. Safe for
// concurrent use.
func (s *System) RecentDeadLetters(after uint64) ([]DeadLetterRecord, <-chan struct{}) {
	return s.deadLog.since(after)
}

// DeadLettersByKind returns how many dead letters there were so far per
// reason kind (DeadLetterKind); past 24 kinds, new ones count as
// "other". Safe for concurrent use.
func (s *System) DeadLettersByKind() map[string]uint64 { return s.deadLog.byKind() }

// typeName is the Go type of v as package.Type, its type arguments too;
// the types actor/internal/spi declares for other packages go by the
// names those packages give them.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	t := reflect.TypeOf(v)
	if name, ok := spiTypeNames[t]; ok {
		return name
	}
	s := t.String()
	var b strings.Builder
	for {
		i := strings.IndexAny(s, "[],")
		if i < 0 {
			break
		}
		b.WriteString(lastPathElem(s[:i]))
		b.WriteByte(s[i])
		s = s[i+1:]
	}
	b.WriteString(lastPathElem(s))
	return b.String()
}

// lastPathElem is s without the directories of its package path.
func lastPathElem(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// spiTypeNames are the public names of spi's generic types.
var spiTypeNames = map[reflect.Type]string{
	reflect.TypeFor[undeliverableReply](): "transport.Undeliverable",
	reflect.TypeFor[joinedMsg]():          "group.Joined",
	reflect.TypeFor[leftMsg]():            "group.Left",
}

// truncateText cuts s to at most maxRecordText bytes, on a rune boundary.
func truncateText(s string) string {
	if len(s) <= maxRecordText {
		return s
	}
	i := maxRecordText
	for i > 0 && !utf8.RuneStart(s[i]) { // not in the middle of a rune
		i--
	}
	return s[:i] + "…"
}
