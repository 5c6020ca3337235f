package codec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFuzzCorpus regenerates the seed corpus in testdata/fuzz/ when
// CODEC_WRITE_CORPUS=1 is set; otherwise it checks that the corpus exists.
// The seeds are valid inputs of each shape plus inputs for every error path,
// so that fuzzing starts from interesting places.
func TestWriteFuzzCorpus(t *testing.T) {
	corpus := map[string]map[string][]any{
		"FuzzDecodeEnvelope": decodeEnvelopeSeeds(t),
		"FuzzFrameReader":    frameReaderSeeds(t),
		"FuzzRoundTrip":      roundTripSeeds(t),
		"FuzzCompactStream":  compactStreamSeeds(t),
	}
	write := os.Getenv("CODEC_WRITE_CORPUS") == "1"
	for target, seeds := range corpus {
		dir := filepath.Join("testdata", "fuzz", target)
		if !write {
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) == 0 {
				t.Errorf("no seed corpus in %s (run with CODEC_WRITE_CORPUS=1): %v", dir, err)
			}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, values := range seeds {
			var b strings.Builder
			b.WriteString("go test fuzz v1\n")
			for _, v := range values {
				switch v := v.(type) {
				case []byte:
					fmt.Fprintf(&b, "[]byte(%q)\n", v)
				case string:
					fmt.Fprintf(&b, "string(%q)\n", v)
				case uint8:
					fmt.Fprintf(&b, "byte(%q)\n", v)
				case uint64:
					fmt.Fprintf(&b, "uint64(%d)\n", v)
				case int64:
					fmt.Fprintf(&b, "int64(%d)\n", v)
				default:
					t.Fatalf("unsupported seed value %T", v)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// envelopeSeeds returns valid and invalid envelope encodings by name.
func envelopeSeeds(t *testing.T) map[string][]byte {
	chat, err := AppendEnvelope(nil, chatEnvelope(t, testPeerID))
	if err != nil {
		t.Fatal(err)
	}
	local, err := AppendEnvelope(nil, chatEnvelope(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"valid-chat":           chat,
		"valid-chat-local":     local,
		"valid-minimal":        validEnvelope(),
		"valid-extensions":     cat(hx("88"), envKind, envTo, envFrom, envType, envBody, hx("18 2a"), hx("a1 01 82 f5 f4"), hx("63 6e6577")),
		"valid-nonminimal":     cat(hx("86 18 01 78 01 61"), envFrom, hx("79 0001 74"), envBody, hx("1b 0000000000000000")),
		"unknown-kind":         cat(hx("86 07"), envTo, envFrom, envType, envBody, envCorr),
		"indefinite-array":     cat(hx("9f"), envKind, envTo, envFrom, envType, envBody, envCorr, hx("ff")),
		"too-few-fields":       cat(hx("85"), envKind, envTo, envFrom, envType, envBody),
		"huge-array-count":     hx("9b ffffffffffffffff"),
		"to-invalid-utf8":      cat(hx("86"), envKind, hx("61 ff"), envFrom, envType, envBody, envCorr),
		"from-three-fields":    cat(hx("86"), envKind, envTo, hx("83 40 61 62 00"), envType, envBody, envCorr),
		"body-truncated":       cat(hx("86"), envKind, envTo, envFrom, envType, hx("45 01 02")),
		"trailing-bytes":       cat(validEnvelope(), hx("00")),
		"extension-deep":       cat(hx("87"), envKind, envTo, envFrom, envType, envBody, envCorr, cat(bytesRepeat(0x81, 17), hx("00"))),
		"body-duplicate-keys":  cat(hx("86"), envKind, envTo, envFrom, hx("6a 746573742e506f696e74"), hx("47 a2 6158 01 6158 02"), envCorr),
		"body-deep":            cat(hx("86"), envKind, envTo, envFrom, hx("67 756e6b6e6f776e"), hx("58 22"), bytesRepeat(0x81, 33), hx("00"), envCorr),
		"body-wrong-type":      cat(hx("86"), envKind, envTo, envFrom, hx("6a 746573742e506f696e74"), hx("45 a1 6158 6161"), envCorr),
		"body-indefinite-text": cat(hx("86"), envKind, envTo, envFrom, hx("66 737472696e67"), hx("47 7f 61 61 62 6263 ff"), envCorr),
	}
}

// bytesRepeat returns n copies of c.
func bytesRepeat(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

func decodeEnvelopeSeeds(t *testing.T) map[string][]any {
	out := map[string][]any{}
	for name, data := range envelopeSeeds(t) {
		out[name] = []any{data}
	}
	return out
}

func frameReaderSeeds(t *testing.T) map[string][]any {
	stream := frames(t, chatEnvelope(t, testPeerID), chatEnvelope(t, nil), &Envelope{Kind: KindSystem, To: "$sys", Corr: 9})
	out := map[string][]any{
		"valid-stream":       {stream},
		"truncated-stream":   {stream[:len(stream)-5]},
		"empty-frame":        {cat(rawFrame(nil), rawFrame(validEnvelope()))},
		"bad-then-good":      {cat(rawFrame(hx("ff00")), rawFrame(validEnvelope()))},
		"unknown-kind-frame": {rawFrame(cat(hx("86 09"), envTo, envFrom, envType, envBody, envCorr))},
		"huge-length":        {hx("80 80 80 80 10")},
		"non-minimal-length": {hx("81 00")},
		"overlong-length":    {hx("80 80 80 80 80 80 80 80 80 01")},
		"length-too-large":   {cat(hx("81 80 04"), make([]byte, 8))},
	}
	for name, data := range envelopeSeeds(t) {
		out["frame-"+name] = []any{rawFrame(data)}
	}
	return out
}

func compactStreamSeeds(t *testing.T) map[string][]any {
	out := map[string][]any{}
	for name, data := range compactSeeds(t) {
		out[name] = []any{data}
	}
	return out
}

func roundTripSeeds(t *testing.T) map[string][]any {
	return map[string][]any{
		"chat":        {uint8(1), "lobby", []byte{}, "alice", "chat.Say", chatBody(t), uint64(0), "hi", int64(0)},
		"remote":      {uint8(1), "lobby", testPeerID, "alice", "chat.Say", chatBody(t), uint64(12345), "héllo", int64(1764676800000000000)},
		"system":      {uint8(2), "$sys", []byte{1, 2, 3}, "", "troupe.Down", []byte{0xf6}, uint64(1 << 63), "", int64(-1)},
		"bad-kind":    {uint8(3), "a", []byte{}, "b", "c", []byte{0}, uint64(1), "x", int64(7)},
		"bad-utf8":    {uint8(1), "a\xffb", []byte{}, "\xc3", "t", []byte{0}, uint64(1), "\xed\xa0\x80", int64(-7)},
		"long-peer":   {uint8(1), "a", make([]byte, MaxPeerIDLen+1), "b", "c", []byte{0}, uint64(1), "x", int64(1)},
		"extreme-int": {uint8(1), "", []byte{}, "", "", []byte{}, ^uint64(0), "", int64(-1 << 63)},
	}
}
