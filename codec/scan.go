package codec

import (
	"fmt"
	"unicode/utf8"
)

// scanner checks that data holds well-formed CBOR within limits, without
// allocating. It is the first line of defence for message bodies: it runs
// before the CBOR library sees the bytes, and it is the only check applied to
// bodies of unknown types (Raw) and to envelope extension fields.
type scanner struct {
	data []byte
	off  int
	lim  *Limits
}

// checkWellFormed reports whether data is exactly one well-formed CBOR data
// item that respects lim: nesting depth, array and map sizes, string lengths,
// valid UTF-8 in text strings, no reserved or misplaced break codes, and no
// trailing bytes. Errors wrap ErrMalformed.
func checkWellFormed(data []byte, lim *Limits) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty CBOR data", ErrMalformed)
	}
	s := scanner{data: data, lim: lim}
	if err := s.item(0); err != nil {
		return err
	}
	if s.off != len(data) {
		return fmt.Errorf("%w: %d trailing bytes after CBOR data item", ErrMalformed, len(data)-s.off)
	}
	return nil
}

// remaining returns the number of unread bytes.
func (s *scanner) remaining() int { return len(s.data) - s.off }

// isBreak reports whether the next byte is the break code, consuming it if so.
// The caller has checked that a byte is available.
func (s *scanner) isBreak() bool {
	if s.data[s.off] == 0xff {
		s.off++
		return true
	}
	return false
}

// item consumes one data item. depth is the number of containers (arrays,
// maps, tags) enclosing it.
func (s *scanner) item(depth int) error {
	start := s.off
	major, ai, arg, next, err := readHead(s.data, s.off)
	if err != nil {
		return err
	}
	s.off = next
	if major >= majorArray && major <= majorTag {
		if depth+1 > s.lim.MaxDepth {
			return fmt.Errorf("%w: nesting deeper than %d at offset %d", ErrMalformed, s.lim.MaxDepth, start)
		}
	}
	switch major {
	case majorUint, majorNegInt:
		if ai == aiIndefinite {
			return fmt.Errorf("%w: indefinite length on an integer at offset %d", ErrMalformed, start)
		}
		return nil
	case majorBytes, majorText:
		if ai != aiIndefinite {
			return s.str(major, arg, start)
		}
		total := uint64(0)
		for {
			if s.remaining() == 0 {
				return fmt.Errorf("%w: truncated indefinite-length string at offset %d", ErrMalformed, start)
			}
			if s.isBreak() {
				return nil
			}
			cstart := s.off
			m, cai, carg, cnext, err := readHead(s.data, s.off)
			if err != nil {
				return err
			}
			if m != major || cai == aiIndefinite {
				return fmt.Errorf("%w: bad chunk in indefinite-length string at offset %d", ErrMalformed, cstart)
			}
			s.off = cnext
			total += carg
			if total > uint64(s.lim.MaxStringLen) {
				return fmt.Errorf("%w: string longer than %d bytes at offset %d", ErrMalformed, s.lim.MaxStringLen, start)
			}
			if err := s.str(major, carg, cstart); err != nil {
				return err
			}
		}
	case majorArray, majorMap:
		return s.container(major, ai, arg, depth+1, start)
	case majorTag:
		if ai == aiIndefinite {
			return fmt.Errorf("%w: indefinite length on a tag at offset %d", ErrMalformed, start)
		}
		return s.item(depth + 1)
	default: // majorSimple
		switch {
		case ai == aiIndefinite:
			return fmt.Errorf("%w: unexpected break code at offset %d", ErrMalformed, start)
		case ai == aiOneByte && arg < 32:
			return fmt.Errorf("%w: invalid simple value encoding at offset %d", ErrMalformed, start)
		}
		return nil
	}
}

// str consumes the payload of a definite-length string of n bytes.
func (s *scanner) str(major byte, n uint64, start int) error {
	if n > uint64(s.lim.MaxStringLen) {
		return fmt.Errorf("%w: %s of %d bytes exceeds limit of %d at offset %d",
			ErrMalformed, majorNames[major], n, s.lim.MaxStringLen, start)
	}
	if n > uint64(s.remaining()) {
		return fmt.Errorf("%w: truncated %s at offset %d", ErrMalformed, majorNames[major], start)
	}
	end := s.off + int(n)
	if major == majorText && !utf8.Valid(s.data[s.off:end]) {
		return fmt.Errorf("%w: invalid UTF-8 in text string at offset %d", ErrMalformed, start)
	}
	s.off = end
	return nil
}

// container consumes the elements of an array or map whose head has been
// read. depth counts the container itself.
func (s *scanner) container(major, ai byte, arg uint64, depth, start int) error {
	limit, per := s.lim.MaxArrayElements, uint64(1)
	if major == majorMap {
		limit, per = s.lim.MaxMapPairs, 2
	}
	if ai != aiIndefinite {
		if arg > uint64(limit) {
			return fmt.Errorf("%w: %s of %d entries exceeds limit of %d at offset %d",
				ErrMalformed, majorNames[major], arg, limit, start)
		}
		// Every data item takes at least one byte: reject impossible
		// counts at once instead of looping until the data runs out.
		if arg*per > uint64(s.remaining()) {
			return fmt.Errorf("%w: truncated %s at offset %d", ErrMalformed, majorNames[major], start)
		}
		for i := uint64(0); i < arg*per; i++ {
			if err := s.item(depth); err != nil {
				return err
			}
		}
		return nil
	}
	for n := 0; ; n++ {
		if s.remaining() == 0 {
			return fmt.Errorf("%w: truncated indefinite-length %s at offset %d", ErrMalformed, majorNames[major], start)
		}
		if s.isBreak() {
			return nil
		}
		if n >= limit {
			return fmt.Errorf("%w: %s exceeds limit of %d entries at offset %d", ErrMalformed, majorNames[major], limit, start)
		}
		for j := uint64(0); j < per; j++ {
			if err := s.item(depth); err != nil {
				return err
			}
		}
	}
}
