package control

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HTTPServer is an HTTP server of the daemon's on a TCP address: the
// metrics (-metrics) or the mesh view (-ui).
type HTTPServer struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup
}

// ServeHTTP listens on addr and serves h until Close.
func ServeHTTP(addr string, h http.Handler) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &HTTPServer{ln: ln, srv: &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
	}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln) // returns at Close; a failed listener leaves Close working
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server, ending open requests (event streams) at once,
// and waits for it.
func (s *HTTPServer) Close() {
	_ = s.srv.Close()
	s.wg.Wait()
}

// ServeMetrics listens on addr and serves what reg gathers (the node's
// metrics, given to peer.WithPrometheus) plus the Go runtime's at
// /metrics.
func ServeMetrics(addr string, reg *prometheus.Registry) (*HTTPServer, error) {
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s, err := ServeHTTP(addr, mux)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return s, nil
}
