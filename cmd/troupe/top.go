package main

import (
	"fmt"
	"io"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/meshview"
)

// 'troupe top': the mesh view in the terminal (meshview.RunTop, Render).
// Full screen when stdin and stdout are terminals; otherwise, or with -n,
// it prints samples as text.

func topCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("top", "", "show the daemon's peers with their message rates, link queues and RTTs, refreshed every second (q quits)", stderr)
	f := addClientFlags(fs, true)
	n := fs.Int("n", 0, "print this many samples as text and exit (default: full screen on a terminal, else 1)")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	if *n < 0 {
		return cli.Fail(stderr, "top", fmt.Errorf("%w: -n must be at least 0", config.ErrUsage))
	}
	h := cli.Home(*f.home)
	ctx, stop := signalContext()
	defer stop()
	full := *n == 0 && !*f.json && isTerminal(stdin) && isTerminal(stdout)
	if full {
		if err := meshview.RunTop(ctx, h, stdin, stdout); err != nil && ctx.Err() == nil {
			return cli.Fail(stderr, "top", err)
		}
		return 0
	}
	var after uint64
	for i := range max(*n, 1) {
		raw, v, err := meshview.Fetch(ctx, h, after)
		if err != nil {
			return cli.Fail(stderr, "top", err)
		}
		after = v.Seq
		switch {
		case *f.json:
			fmt.Fprintln(stdout, cli.CompactJSON(raw))
		default:
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprint(stdout, meshview.Render(v, 100, 0))
		}
	}
	return 0
}
