package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/peer"
)

// logLevelResult answers a loglevel request.
type logLevelResult struct {
	Level    string `json:"level"`
	Previous string `json:"previous,omitempty"` // when it was changed
}

// logLevel sets the daemon's log level (libp2p's follows) when level is
// not empty, and says what it is. It lasts until the daemon stops;
// config log_level is the level it starts with.
func (d *runningDaemon) logLevel(level string) (logLevelResult, error) {
	was := d.level.Level()
	r := logLevelResult{Level: levelName(was)}
	if level == "" {
		return r, nil
	}
	l, err := config.ParseLevel(level)
	if err != nil {
		return r, fmt.Errorf("%w: log level %v", config.ErrUsage, err)
	}
	d.level.Set(l)
	peer.SetLibp2pLevel(l)
	d.log.Info("log level changed", "level", levelName(l), "previous", levelName(was))
	return logLevelResult{Level: levelName(l), Previous: levelName(was)}, nil
}

// levelName is a level as config log_level spells it.
func levelName(l interface{ String() string }) string { return strings.ToLower(l.String()) }

// logCmd is 'troupe log level [LEVEL]'.
func logCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("log", "level [debug|info|warn|error]", "print the daemon's log level, or change it until the daemon stops (libp2p's logs follow; config log_level is the level it starts with)", stderr)
	f := addClientFlags(fs, true)
	pos, ok, code := cli.ParseArgs(fs, args, 1, 2)
	if !ok {
		return code
	}
	if pos[0] != "level" {
		return cli.Fail(stderr, "log", fmt.Errorf("%w: unknown subcommand %q; use 'troupe log level [LEVEL]'", config.ErrUsage, pos[0]))
	}
	req := control.Request{Cmd: "loglevel"}
	if len(pos) == 2 {
		if _, err := config.ParseLevel(pos[1]); err != nil {
			return cli.Fail(stderr, "log", fmt.Errorf("%w: %w", config.ErrUsage, err))
		}
		req.Level = pos[1]
	}
	var r logLevelResult
	return f.request("log", req, &r, stdout, stderr, func() {
		if r.Previous != "" {
			fmt.Fprintf(stdout, "log level %s (was %s)\n", r.Level, r.Previous)
			return
		}
		fmt.Fprintf(stdout, "log level %s\n", r.Level)
	})
}
