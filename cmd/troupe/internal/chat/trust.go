package chat

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/troupe-mesh/troupe/actor"
)

// What a chat shows of other peers' users, who may be hostile: a nick is
// bound to the peer whose user was first seen with it in the room (the
// local user's to this peer); a direct message from a peer binds nothing.
// A peer may hold at most maxNicksPerPeer bound nicks (a user who renames,
// a daemon with a few users), so no peer can take the mesh's nicks. A
// user of another peer claiming a bound nick is shown as nick@<the last 6
// characters of its peer ID>; nobody is renamed because of another peer.
// /msg nick goes only to the nick's bound peer (see resolveNick). Each
// peer may show lineRate lines a second (lineBurst at once) in the room
// and in direct messages; the rest are dropped and counted.

const (
	maxBoundNicks   = 4096 // nicks bound at once; beyond, new ones show their peer
	maxNicksPerPeer = 16   // nicks one other peer may have bound
	lineRate        = 5    // lines a second one peer's users may show
	lineBurst       = 10
	maxSenders      = 1024 // peers whose rate is remembered
)

// nickBook binds nicks to peers. Safe for concurrent use (a user's old
// and new actor overlap during a rename).
type nickBook struct {
	mu    sync.Mutex
	owner map[string]string // nick -> peer ID
	held  map[string]int    // peer ID -> nicks bound to it
}

// bind makes peer the owner of nick (the local user's own nick), whoever
// had it; the local peer has no cap.
func (b *nickBook) bind(nick, peer string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.initLocked()
	if old, ok := b.owner[nick]; ok {
		b.held[old]--
	}
	b.owner[nick] = peer
	b.held[peer]++
}

func (b *nickBook) initLocked() {
	if b.owner == nil {
		b.owner, b.held = make(map[string]string), make(map[string]int)
	}
}

// show returns how to show nick, used by a user of peer seen in the room:
// the nick itself when peer owns it (binding it to peer if nobody does,
// the book is not full and peer holds fewer than maxNicksPerPeer), else
// nick@<peer's last 6 characters>.
func (b *nickBook) show(nick, peer string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.initLocked()
	own, ok := b.owner[nick]
	if !ok && len(b.owner) < maxBoundNicks && b.held[peer] < maxNicksPerPeer {
		b.owner[nick], own, ok = peer, peer, true
		b.held[peer]++
	}
	if ok && own == peer {
		return nick
	}
	return nick + "@" + peerTail(peer)
}

// label is show without binding: how to show nick of peer when the
// evidence (a direct message from anyone) must not claim the nick.
func (b *nickBook) label(nick, peer string) string {
	if b.owns(nick, peer) {
		return nick
	}
	return nick + "@" + peerTail(peer)
}

// owns reports whether peer owns nick.
func (b *nickBook) owns(nick, peer string) bool {
	own, ok := b.ownerOf(nick)
	return ok && own == peer
}

// ownerOf returns the peer nick is bound to.
func (b *nickBook) ownerOf(nick string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	own, ok := b.owner[nick]
	return own, ok
}

// resolveNick picks the actor /msg shown goes to among cands (the users
// named chat-<nick> that the room, this peer and the directory know). A
// plain nick goes only to the actor of the peer it is bound to: never to
// another holder of the same actor name, whatever its peer ID. nick@tail
// goes to the one peer whose ID ends in tail (the bound owner first, if
// it matches). It returns the actor and how to show it, or an error for
// the sender's screen: an unknown nick, an absent owner, an ambiguous
// tail.
func resolveNick(b *nickBook, shown string, cands []actor.Ref) (actor.Ref, string, error) {
	nick, tail := splitShown(shown)
	if err := CheckName("nick", nick); err != nil {
		return actor.Ref{}, "", err
	}
	owner, bound := b.ownerOf(nick)
	var others []string // cands not taken, as nick@tail
	if tail == "" {
		if !bound {
			return actor.Ref{}, "", unboundNickError(nick, cands)
		}
		for _, ref := range cands {
			if ref.Peer() == owner {
				return ref, nick, nil
			}
		}
		return actor.Ref{}, "", fmt.Errorf("%s (of peer …%s) is not reachable now; /who lists the room", nick, peerTail(owner))
	}
	var pick actor.Ref
	for _, ref := range cands {
		if !strings.HasSuffix(ref.Peer(), tail) {
			continue
		}
		if bound && ref.Peer() == owner {
			return ref, b.label(nick, ref.Peer()), nil
		}
		if !pick.IsZero() && pick.Peer() != ref.Peer() {
			others = append(others, nick+"@"+peerTail(ref.Peer()))
			continue
		}
		pick = ref
	}
	switch {
	case pick.IsZero():
		return actor.Ref{}, "", fmt.Errorf("no user %s is known; /who lists the room", shown)
	case len(others) > 0:
		return actor.Ref{}, "", fmt.Errorf("%s names more than one peer (%s and %s); give more of the peer ID", shown, nick+"@"+peerTail(pick.Peer()), strings.Join(others, ", "))
	}
	return pick, b.label(nick, pick.Peer()), nil
}

// unboundNickError says that nick is bound to no peer, naming the users
// who have it so that the user may pick one with nick@tail.
func unboundNickError(nick string, cands []actor.Ref) error {
	if len(cands) == 0 {
		return fmt.Errorf("no user %s is known; /who lists the room", nick)
	}
	seen := map[string]bool{}
	var names []string
	for _, ref := range cands {
		if n := nick + "@" + peerTail(ref.Peer()); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return fmt.Errorf("%s has not been seen in the room, so it is no peer's yet; users of that name: %s (write /msg %s text)", nick, strings.Join(names, ", "), names[0])
}

// peerTail is the last 6 characters of a peer ID.
func peerTail(p string) string { return p[max(0, len(p)-6):] }

// splitShown parses a nick as show writes it: nick, or nick@tail.
func splitShown(s string) (nick, tail string) {
	nick, tail, _ = strings.Cut(s, "@")
	return nick, tail
}

// lineLimiter is a token bucket per peer (lineRate a second, lineBurst
// at once). Safe for concurrent use.
type lineLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	dropped atomic.Uint64
}

// allow reports whether a line of peer may be shown now, and counts it
// as dropped when not.
func (l *lineLimiter) allow(peer string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = make(map[string]*rate.Limiter)
	}
	b := l.buckets[peer]
	if b == nil {
		if len(l.buckets) >= maxSenders {
			l.forgetFullLocked(now)
		}
		b = rate.NewLimiter(lineRate, lineBurst)
		l.buckets[peer] = b
	}
	if !b.AllowN(now, 1) {
		l.dropped.Add(1)
		return false
	}
	return true
}

// forgetFullLocked drops the buckets that have refilled (a new one starts
// full anyway), or all of them if none has.
func (l *lineLimiter) forgetFullLocked(now time.Time) {
	for p, b := range l.buckets {
		if b.TokensAt(now) >= lineBurst {
			delete(l.buckets, p)
		}
	}
	if len(l.buckets) >= maxSenders {
		clear(l.buckets)
	}
}
