package peer

import (
	"context"
	"log/slog"
	"slices"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
	"go.uber.org/zap/zapcore"
)

// LogLibp2pTo sends the logs of libp2p and of the services it runs (the
// DHT, GossipSub) to h, the handler of the application's logger, so that
// they follow its format and level: warnings and errors, and everything
// when h takes debug records. It affects the whole process, and each
// libp2p logger that has not logged yet: call it once, before New.
func LogLibp2pTo(h slog.Handler) {
	floor := slog.LevelWarn
	if h.Enabled(context.Background(), slog.LevelDebug) {
		floor = slog.LevelDebug
	}
	lh := &floorHandler{Handler: h, floor: floor}
	gologshim.SetDefaultHandler(lh)                      // go-libp2p, GossipSub
	golog.SetPrimaryCore(&slogCore{h: lh})               // the DHT (go-log, on zap)
	_ = golog.SetLogLevel("*", zapLevel(floor).String()) // loggers to come too; never fails for a zap level
}

// floorHandler is a handler that drops records below floor.
type floorHandler struct {
	slog.Handler
	floor slog.Level
}

func (f *floorHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.floor && f.Handler.Enabled(ctx, l)
}

func (f *floorHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &floorHandler{Handler: f.Handler.WithAttrs(attrs), floor: f.floor}
}

func (f *floorHandler) WithGroup(name string) slog.Handler {
	return &floorHandler{Handler: f.Handler.WithGroup(name), floor: f.floor}
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
