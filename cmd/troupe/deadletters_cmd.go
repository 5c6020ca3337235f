package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// deadlettersCmd is 'troupe deadletters [-n N] [--follow] [--json]'.
func deadlettersCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("deadletters", "", "list the latest messages that reached no actor on this peer (time, target, sender, type, size, reason; never the message), and with --follow the new ones as they come", stderr)
	f := addClientFlags(fs, true)
	count := fs.Int("n", 0, "show at most this many of the latest (0: all the daemon keeps)")
	follow := fs.Bool("follow", false, "keep printing new dead letters until interrupted")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	if *count < 0 {
		return cli.Fail(stderr, "deadletters", fmt.Errorf("%w: -n must not be negative", config.ErrUsage))
	}
	req := control.Request{Cmd: "deadletters", Count: *count, Follow: *follow}
	asJSON := *f.json
	if !*follow {
		var r control.DeadLettersResult
		return f.request("deadletters", req, &r, stdout, stderr, func() {
			noun := "dead letters"
			if r.Total == 1 {
				noun = "dead letter"
			}
			fmt.Fprintf(stdout, "%d %s since the daemon started%s\n", r.Total, noun, kindSummary(r.ByKind))
			if r.Omitted > 0 {
				fmt.Fprintf(stdout, "(%d older ones kept but left out: too much text for one answer)\n", r.Omitted)
			}
			for _, e := range r.Recent {
				fmt.Fprintln(stdout, deadLetterLine(e))
			}
		})
	}
	ctx, stop := signalContext()
	defer stop()
	var r control.DeadLettersResult
	conn, err := control.Call(ctx, cli.Home(*f.home), req, &r, true)
	if err != nil {
		return cli.Fail(stderr, "deadletters", err)
	}
	defer conn.Close()
	stopRead := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopRead()
	print := func(e control.DeadLetter) {
		if asJSON {
			b, _ := cli.MarshalJSON(e)
			fmt.Fprintln(stdout, string(b))
			return
		}
		fmt.Fprintln(stdout, deadLetterLine(e))
	}
	for _, e := range r.Recent {
		print(e)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var e control.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return cli.Fail(stderr, "deadletters", fmt.Errorf("bad line from the daemon: %w", err))
		}
		print(e)
	}
	if ctx.Err() != nil {
		return 0 // interrupted: the normal end
	}
	fmt.Fprintln(stderr, "troupe deadletters: the daemon stopped")
	return 1
}

// deadLetterLine is one dead letter for people.
func deadLetterLine(e control.DeadLetter) string {
	from := "-"
	if e.From != "" {
		from = e.From
	}
	size := "size unknown"
	if e.Size >= 0 {
		size = fmt.Sprintf("%d B", e.Size)
	}
	return fmt.Sprintf("%s #%d %s: to %s from %s, %s, %s", e.Time.Local().Format(time.DateTime+".000"), e.Seq, e.Kind, e.To, from, e.Type, size)
}

// kindSummary is ": 3 no such actor, 1 no route", or "" for none.
func kindSummary(byKind map[string]uint64) string {
	if len(byKind) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		parts = append(parts, fmt.Sprintf("%d %s", byKind[k], k))
	}
	return ": " + strings.Join(parts, ", ")
}
