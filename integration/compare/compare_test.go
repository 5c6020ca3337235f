package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as a remote workload's server or
// client process: runRemote re-executes os.Executable() with -role.
func TestMain(m *testing.M) {
	if isChild(os.Args[1:]) {
		os.Exit(runChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// tinyConfig is the quick mode shrunk further, so that the whole harness
// runs in about a second, also under the race detector.
func tinyConfig() config {
	c := quickConfig(1)
	c.dur = 20 * time.Millisecond
	c.rings = []int{1_000}
	c.minHops, c.laps = 10_000, 1
	c.spawnN, c.memN = 2_000, 2_000
	c.remoteN, c.remoteWarm, c.askN = 25_000, 5_000, 200
	c.timeout = 30 * time.Second
	return c
}

// TestHarness runs every workload once on both systems and checks that the
// table has a sane row for each.
func TestHarness(t *testing.T) {
	ws := workloads(tinyConfig())
	var log bytes.Buffer
	rows, err := runAll(ws, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	want := 0
	for _, w := range ws {
		want += 1 + len(w.extra)
	}
	if len(rows) != want {
		t.Fatalf("got %d rows for %d workloads and their extra rows", len(rows), want)
	}
	for _, r := range rows {
		protos := 1
		if len(r.w.systems) == 1 || strings.Contains(r.w.name, "raw libp2p") {
			protos = 0 // a baseline or floor runs once, in the troupe column
		}
		if len(r.troupe) != 1 || len(r.proto) != protos {
			t.Errorf("%s: %d troupe and %d protoactor results, want 1 and %d", r.w.name, len(r.troupe), len(r.proto), protos)
			continue
		}
		// Memory growth can be slightly negative when little is spawned,
		// and a short run may make no collection; everything else must be
		// a positive rate or time.
		if r.w.unit != "B/actor" && r.w.unit != "GCs" && (median(r.troupe) <= 0 || protos == 1 && median(r.proto) <= 0) {
			t.Errorf("%s: non-positive result troupe=%v protoactor=%v", r.w.name, r.troupe, r.proto)
		}
	}
	var out bytes.Buffer
	writeTable(&out, rows)
	table := out.String()
	if got := strings.Count(table, "\n"); got != want+2 {
		t.Errorf("table has %d lines, want %d:\n%s", got, want+2, table)
	}
	t.Logf("\n%s", table)
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{6_820_000, "msgs/s", "6.82 M msgs/s"},
		{620_500, "msgs/s", "620.5 k msgs/s"},
		{312.4, "ns/hop", "312 ns/hop"},
		{1e6, "actors/s", "1.00 M actors/s"},
		{17.96, "µs", "18.0 µs"},
		{45.25, "MiB", "45.2 MiB"},
	} {
		if got := formatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	if got := count(100_000); got != "100k" {
		t.Errorf("count(100000) = %q", got)
	}
}
