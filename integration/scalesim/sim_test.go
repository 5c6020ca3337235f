package scalesim

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/peer"
)

// TestSmallMesh simulates 300 peers: every name is found, in few hops,
// and the budget holds once trims ran.
func TestSmallMesh(t *testing.T) {
	f, err := Run(Config{N: 300, Seed: 1, Lookups: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", f)
	if f.Found != 1 {
		t.Errorf("%.0f %% of the lookups found their name, want all", 100*f.Found)
	}
	// 300 peers are 15 buckets' worth of 20: a lookup from a table of
	// O(20 log N) peers takes a few rounds of α = 10.
	if f.Hops.Max > 4 {
		t.Errorf("lookups took up to %v rounds, want at most 4", f.Hops.Max)
	}
	if f.Conns.Median > peer.DefaultConnsHigh {
		t.Errorf("median peer holds %v connections, over the budget's high mark %d", f.Conns.Median, peer.DefaultConnsHigh)
	}
	if f.RoutingTable.Max >= 300 || f.RoutingTable.Median < 20 {
		t.Errorf("routing tables hold %+v peers of 300", f.RoutingTable)
	}
	if f.NameRecords.Median < 1 {
		t.Errorf("name records per peer %+v: the names were not provided", f.NameRecords)
	}
}

func TestRunRejectsTinyMesh(t *testing.T) {
	if _, err := Run(Config{N: 1}); err == nil {
		t.Fatal("Run of 1 peer: no error")
	}
}

// BenchmarkSim simulates TROUPE_SCALESIM_N peers (default 1,000; the
// 10,000 of docs/scale.md take minutes) and reports the figures of the
// measured curve.
//
//	TROUPE_SCALESIM_N=10000 go test ./integration/scalesim -run '^$' -bench Sim -benchtime 1x -timeout 60m
func BenchmarkSim(b *testing.B) {
	n := 1000
	if s := os.Getenv("TROUPE_SCALESIM_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("TROUPE_SCALESIM_N=%q: %v", s, err)
		}
	}
	for range b.N {
		f, err := Run(Config{N: n, Seed: 1, AdTTL: 90 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%+v", f)
		b.ReportMetric(f.RoutingTable.Median, "rt-median")
		b.ReportMetric(f.Hops.Median, "hops-p50")
		b.ReportMetric(f.Hops.P99, "hops-p99")
		b.ReportMetric(f.Queries.Median, "queries-p50")
		b.ReportMetric(f.Queries.P99, "queries-p99")
		b.ReportMetric(100*f.Found, "%-found")
		b.ReportMetric(f.Conns.Median, "conns-median")
		b.ReportMetric(f.Conns.Max, "conns-max")
		b.ReportMetric(f.MeshEdges.Median, "mesh-edges-median")
		b.ReportMetric(f.NameRecords.Median, "name-records-median")
		b.ReportMetric(f.NameRecords.Max, "name-records-max")
		b.ReportMetric(float64(f.AdsHeld), "ads-held")
		b.ReportMetric(f.Background.Total, "idle-B/s/peer")
	}
}
