package actor

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest actor name, in bytes.
const MaxNameLen = 255

// Ref addresses an actor: the ID of the peer that hosts it plus its name on
// that peer. It is a small comparable value, usable as a map key; two Refs
// are equal when they name the same actor. The zero Ref addresses nothing.
//
// A Ref is one string, "<peer>/<name>" (neither part holds '/'): two
// words with one pointer, which is what a closure that captures a Ref
// (as a paper-style handler does, once per message) and a mailbox node
// pay for it.
type Ref struct {
	s string
}

// refOf returns the Ref of name on peer, both valid.
func refOf(peer, name string) Ref { return Ref{s: peer + "/" + name} }

// split returns where the peer ends in r.s, or -1 for the zero Ref. It
// looks from the end: the name is mostly shorter than the peer's ID.
func (r Ref) split() int { return strings.LastIndexByte(r.s, '/') }

// on reports whether r's peer is peer (not empty).
func (r Ref) on(peer string) bool {
	return len(r.s) > len(peer) && r.s[len(peer)] == '/' && r.s[:len(peer)] == peer
}

// NewRef returns the Ref of the actor called name on peer. It does not check
// that such an actor exists. It returns ErrInvalidRef when peer is empty or
// holds '/', and ErrInvalidName for a bad name (generated names, which start
// with '$', are accepted here).
func NewRef(peer, name string) (Ref, error) {
	if err := checkRef(peer, name); err != nil {
		return Ref{}, err
	}
	return refOf(peer, name), nil
}

// checkRef returns NewRef's error for peer and name, or nil.
func checkRef(peer, name string) error {
	if peer == "" || strings.ContainsRune(peer, '/') || !utf8.ValidString(peer) {
		return fmt.Errorf("%w: peer %q", ErrInvalidRef, peer)
	}
	return checkName(name, true)
}

// ParseRef parses "<peer>/<name>" or "/p2p/<peer>/actor/<name>".
func ParseRef(s string) (Ref, error) {
	if rest, ok := strings.CutPrefix(s, "/p2p/"); ok {
		peer, name, ok := strings.Cut(rest, "/actor/")
		if !ok {
			return Ref{}, fmt.Errorf("%w: %q lacks /actor/<name>", ErrInvalidRef, s)
		}
		return NewRef(peer, name)
	}
	peer, name, ok := strings.Cut(s, "/")
	if !ok {
		return Ref{}, fmt.Errorf("%w: %q is not <peer>/<name>", ErrInvalidRef, s)
	}
	if err := checkRef(peer, name); err != nil {
		return Ref{}, err
	}
	return Ref{s: s}, nil // s is the Ref already: no copy
}

// Peer returns the ID of the peer that hosts the actor.
func (r Ref) Peer() string {
	if i := r.split(); i >= 0 {
		return r.s[:i]
	}
	return ""
}

// Name returns the actor's name on its peer.
func (r Ref) Name() string {
	if i := r.split(); i >= 0 {
		return r.s[i+1:]
	}
	return ""
}

// IsZero reports whether r is the zero Ref.
func (r Ref) IsZero() bool { return r.s == "" }

// String returns "<peer>/<name>", or "<none>" for the zero Ref.
func (r Ref) String() string {
	if r.IsZero() {
		return "<none>"
	}
	return r.s
}

// MarshalText encodes r as "<peer>/<name>" (empty for the zero Ref).
func (r Ref) MarshalText() ([]byte, error) {
	if r.IsZero() {
		return nil, nil
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses what MarshalText produced.
func (r *Ref) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = Ref{}
		return nil
	}
	v, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalBinary is MarshalText: a Ref in a message body travels as the
// bytes of "<peer>/<name>" (the codec's CBOR calls it; without it the
// unexported field made a Ref arrive as the zero Ref).
func (r Ref) MarshalBinary() ([]byte, error) { return r.MarshalText() }

// UnmarshalBinary is UnmarshalText: what another peer sends is parsed
// and checked like any address (ErrInvalidRef, ErrInvalidName).
func (r *Ref) UnmarshalBinary(b []byte) error { return r.UnmarshalText(b) }

// checkName validates an actor name; generated ('$'-prefixed) names are
// allowed only when generated is true.
func checkName(name string, generated bool) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidName, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidName, name)
	case name[0] == '$' && !generated:
		return fmt.Errorf("%w: %q: names starting with '$' are reserved for generated names", ErrInvalidName, name)
	}
	for _, r := range name {
		if r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: %q holds %q", ErrInvalidName, name, r)
		}
	}
	return nil
}
