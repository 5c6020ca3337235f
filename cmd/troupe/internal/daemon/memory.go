package daemon

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/memrelease"
)

// memoryEvery is how often the daemon samples its heap for memrelease.
const memoryEvery = 5 * time.Second

// startMemoryRelease gives heap freed after an attack or a burst back to
// the system once the daemon is quiet, not up to 2 minutes later
// (memrelease), unless GOGC or GOMEMLIMIT is set; with prom, it counts
// the releases and the bytes they gave back. It returns the func that
// stops it, and what 'troupe id --json' says of it (memory_release).
func startMemoryRelease(log *slog.Logger, prom *prometheus.Registry) (stop func(), state string) {
	if why := memrelease.Off(); why != "" {
		log.Debug("memory: releases off", "why", why)
		return func() {}, "off: " + why
	}
	releases := prometheus.NewCounter(prometheus.CounterOpts{Name: "troupe_memory_releases_total",
		Help: "Times the daemon collected and returned its free heap to the system once quiet."})
	bytes := prometheus.NewCounter(prometheus.CounterOpts{Name: "troupe_memory_released_bytes_total",
		Help: "Heap bytes those releases gave back (kept before minus kept after)."})
	if prom != nil {
		prom.MustRegister(releases, bytes)
	}
	return memrelease.Start(memrelease.New(), memoryEvery, func(before, after memrelease.Sample) {
		var gave uint64
		if before.Kept() > after.Kept() {
			gave = before.Kept() - after.Kept()
		}
		releases.Inc()
		bytes.Add(float64(gave))
		log.Debug("memory: heap returned to the system", "gave_mib", gave>>20, "kept_mib", after.Kept()>>20)
	}), "on"
}
