package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsServer serves /metrics over HTTP.
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup
}

// serveMetrics listens on addr and serves what reg gathers (the node's
// metrics, given to peer.WithPrometheus) plus the Go runtime's at
// /metrics.
func serveMetrics(addr string, reg *prometheus.Registry) (*metricsServer, error) {
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &metricsServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed; Close still works
		}
	}()
	return m, nil
}

// Addr is the address the server listens on.
func (m *metricsServer) Addr() net.Addr { return m.ln.Addr() }

// Close stops the server and waits for it.
func (m *metricsServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	m.wg.Wait()
}
