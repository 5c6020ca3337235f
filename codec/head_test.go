package codec

import (
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func TestHeads(t *testing.T) {
	args := []uint64{0, 1, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1}
	for major := byte(0); major <= majorTag; major++ {
		for _, arg := range args {
			b := appendHead(nil, major, arg)
			if len(b) != headLen(arg) {
				t.Errorf("head(%d, %d) is %d bytes, headLen says %d", major, arg, len(b), headLen(arg))
			}
			m, ai, got, next, err := readHead(b, 0)
			if err != nil || m != major || got != arg || next != len(b) || ai == aiIndefinite {
				t.Errorf("readHead(%x) = %d, %d, %d, %d, %v", b, m, ai, got, next, err)
			}
		}
	}
	// The heads agree with a reference encoder.
	for _, arg := range args {
		want, err := cbor.Marshal(arg)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendHead(nil, majorUint, arg); string(got) != string(want) {
			t.Errorf("head for %d = %x, cbor says %x", arg, got, want)
		}
	}
}

func TestReadHeadErrors(t *testing.T) {
	for _, in := range []string{"", "18", "19 00", "1a 000000", "1b 00000000000000", "1c", "1d", "1e", "5c"} {
		if _, _, _, _, err := readHead(hx(in), 0); !errors.Is(err, ErrMalformed) {
			t.Errorf("readHead(%s): err = %v, want ErrMalformed", in, err)
		}
	}
}

func TestCheckWellFormed(t *testing.T) {
	lim := DefaultLimits()
	valid := []string{
		"00", "17", "18 18", "1b ffffffffffffffff", "20", "3b ffffffffffffffff",
		"40", "43 010203", "5f 41 01 42 0203 ff", "5f ff",
		"60", "63 616263", "7f 61 61 62 6263 ff", "66 e5908de5898d",
		"80", "83 01 02 03", "9f 01 9f ff ff", "a0", "a1 01 02", "bf 01 02 ff",
		"c0 74 323032362d31322d30325431323a30303a30305a", "d8 2a 45 0001020304", "c2 41 01",
		"f4", "f5", "f6", "f7", "f8 20", "f8 ff", "f9 3c00", "fa 3f800000", "fb 3ff0000000000000",
	}
	for _, in := range valid {
		data := hx(in)
		if err := checkWellFormed(data, &lim); err != nil {
			t.Errorf("checkWellFormed(%s) = %v", in, err)
		}
		if err := cbor.Wellformed(data); err != nil {
			t.Errorf("test input %s is not well formed for cbor: %v", in, err)
		}
	}
}
