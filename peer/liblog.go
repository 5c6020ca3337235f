package peer

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"slices"
	"strings"
	"time"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
	"go.uber.org/zap/zapcore"
)

// LogLibp2pTo sends the logs of libp2p and of the services it runs (the
// DHT, GossipSub), and what other libraries write with the standard log
// package (go-zeroconf, for mDNS), to h, the handler of the application's
// logger, so that they follow its format and level: warnings and errors,
// and everything when h takes debug records. Warnings that are expected
// in a healthy mesh (a peer that leaves cuts its identify stream; mDNS on
// a machine with no IPv4 or IPv6 multicast interface) come as debug.
// It affects the whole process, and each libp2p logger that has not
// logged yet: call it once, before New. When h's level changes later
// (a slog.LevelVar), call SetLibp2pLevel.
func LogLibp2pTo(h slog.Handler) {
	lh := &floorHandler{Handler: h}
	gologshim.SetDefaultHandler(lh)        // go-libp2p, GossipSub
	golog.SetPrimaryCore(&slogCore{h: lh}) // the DHT (go-log, on zap)
	log.SetFlags(0)                        // the record has the time
	log.SetPrefix("")
	log.SetOutput(&stdLogWriter{h: h})
	SetLibp2pLevel(slog.LevelInfo)
	if h.Enabled(context.Background(), slog.LevelDebug) {
		SetLibp2pLevel(slog.LevelDebug)
	}
}

// SetLibp2pLevel tells the libp2p loggers that the handler LogLibp2pTo
// was given now takes records from level l up: at debug, libp2p's debug
// records go through too; above it, its warnings and errors only.
func SetLibp2pLevel(l slog.Level) {
	_ = golog.SetLogLevel("*", zapLevel(libFloor(l)).String()) // loggers to come too; never fails for a zap level
}

// libFloor is the lowest level of libp2p's records that go through when
// the application's logger is at l.
func libFloor(l slog.Level) slog.Level {
	if l <= slog.LevelDebug {
		return slog.LevelDebug
	}
	return max(l, slog.LevelWarn)
}

// floorHandler is a handler that takes libp2p's records from warnings up,
// or all of them when its handler takes debug records, and lowers the
// expected ones (libNoise) to debug.
type floorHandler struct {
	slog.Handler
}

// libNoise are libp2p warnings that a healthy mesh logs in the normal
// course: a peer that leaves resets its streams.
var libNoise = []string{
	"error reading identify message",
	"failed to write identify message",
	"error writing identify push",
	"failed to send identify push",
}

func (f *floorHandler) Enabled(ctx context.Context, l slog.Level) bool {
	floor := slog.LevelWarn
	if f.Handler.Enabled(ctx, slog.LevelDebug) {
		floor = slog.LevelDebug
	}
	return l >= floor && f.Handler.Enabled(ctx, l)
}

// libNoiseOnExit are libp2p warnings that are noise when their error is
// that of a connection going away (libExitErrors).
var libNoiseOnExit = []string{"failed to identify peer"}

// libExitErrors mark the error of a connection that went away.
var libExitErrors = []string{"connection reset", "stream reset", "EOF", "closed", "canceled"}

// libNoiseRecord reports whether r is a libp2p warning a healthy mesh makes.
func libNoiseRecord(r slog.Record) bool {
	if r.Level != slog.LevelWarn {
		return false
	}
	if slices.Contains(libNoise, r.Message) {
		return true
	}
	if !slices.Contains(libNoiseOnExit, r.Message) {
		return false
	}
	exit := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" || a.Key == "err" {
			text := a.Value.String()
			exit = slices.ContainsFunc(libExitErrors, func(e string) bool { return strings.Contains(text, e) })
		}
		return !exit
	})
	return exit
}

func (f *floorHandler) Handle(ctx context.Context, r slog.Record) error {
	if libNoiseRecord(r) {
		if !f.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return f.Handler.Handle(ctx, r)
}

func (f *floorHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &floorHandler{Handler: f.Handler.WithAttrs(attrs)}
}

func (f *floorHandler) WithGroup(name string) slog.Handler {
	return &floorHandler{Handler: f.Handler.WithGroup(name)}
}

// stdLogWriter turns the lines of the standard log package into records
// of h: "[name] text" becomes text with logger=name. go-zeroconf's lines
// ("no suitable IPv4 interface" at every start on a machine without one:
// `troupe doctor` says what it means) are debug; other libraries' are
// warnings.
type stdLogWriter struct{ h slog.Handler }

func (w *stdLogWriter) Write(p []byte) (int, error) {
	ctx := context.Background()
	for line := range bytes.Lines(p) {
		text := strings.TrimSpace(string(line))
		if text == "" {
			continue
		}
		name := "log"
		if rest, ok := strings.CutPrefix(text, "["); ok {
			if n, msg, ok := strings.Cut(rest, "]"); ok && n != "" && !strings.ContainsAny(n, " \t") {
				name, text = n, strings.TrimSpace(msg)
			}
		}
		level := slog.LevelWarn
		if name == "zeroconf" {
			level = slog.LevelDebug
		}
		if !w.h.Enabled(ctx, level) {
			continue
		}
		r := slog.NewRecord(time.Now(), level, text, 0)
		r.AddAttrs(slog.String("logger", name))
		_ = w.h.Handle(ctx, r)
	}
	return len(p), nil
}

// slogCore is a zap core that writes to a slog handler.
type slogCore struct {
	h      slog.Handler
	fields []zapcore.Field
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h, fields: append(slices.Clip(c.fields), fs...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.AddAttrs(slog.Any(k, enc.Fields[k]))
	}
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// slogLevel is zap's level l as a slog level.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// zapLevel is slog's level l as a zap level.
func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l <= slog.LevelDebug:
		return zapcore.DebugLevel
	case l <= slog.LevelInfo:
		return zapcore.InfoLevel
	case l <= slog.LevelWarn:
		return zapcore.WarnLevel
	}
	return zapcore.ErrorLevel
}
