package main

import (
	"fmt"
	"io"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

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
	var r control.LogLevelResult
	return f.request("log", req, &r, stdout, stderr, func() {
		if r.Previous != "" {
			fmt.Fprintf(stdout, "log level %s (was %s)\n", r.Level, r.Previous)
			return
		}
		fmt.Fprintf(stdout, "log level %s\n", r.Level)
	})
}
