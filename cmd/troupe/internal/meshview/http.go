package meshview

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// The live mesh view over HTTP: the page (ui/, embedded), GET /api/mesh
// (the latest View as JSON), GET /api/deadletters (the latest dead
// letters, which the daemon gives) and GET /api/events (server-sent events,
// one "mesh" event per sample). The daemon serves it on -ui (loopback
// only) and on its control socket (curl --unix-socket). It is read-only:
// nothing here sends a message or changes the node.

//go:embed ui
var uiFiles embed.FS

// maxViewWatchers caps the event streams served at once.
const maxViewWatchers = 16

// WriteTimeout bounds one write to an event stream: a client that
// stopped reading is dropped, not waited for.
const WriteTimeout = 5 * time.Second

// NewHandler returns the view's HTTP handler on hub, with the dead
// letters of dead (GET /api/deadletters).
func NewHandler(hub *Hub, dead func(count int, after uint64) control.DeadLettersResult) http.Handler {
	static, _ := fs.Sub(uiFiles, "ui")
	watchers := make(chan struct{}, maxViewWatchers)
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/mesh", func(w http.ResponseWriter, r *http.Request) {
		_, b, err := hub.Next(r.Context(), 0)
		if err != nil {
			if r.Context().Err() == nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	})
	mux.HandleFunc("GET /api/deadletters", DeadLettersHandler(dead))
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		select {
		case watchers <- struct{}{}:
			defer func() { <-watchers }()
		default:
			http.Error(w, "too many event streams", http.StatusServiceUnavailable)
			return
		}
		streamViews(w, r, hub)
	})
	return localOnly(mux)
}

// streamViews writes each new sample to w as a server-sent event until the
// client goes away or a write takes longer than WriteTimeout.
func streamViews(w http.ResponseWriter, r *http.Request, hub *Hub) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	var after uint64
	for {
		v, b, err := hub.Next(r.Context(), after)
		if err != nil {
			return
		}
		after = v.Seq
		_ = rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
		if _, err := fmt.Fprintf(w, "event: mesh\ndata: %s\n\n", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// localOnly refuses requests whose Host is not this machine (a web page
// elsewhere that rebinds its name to 127.0.0.1 must not read the view)
// and sets headers that keep the page to its own files.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !config.IsLocalHost(r.Host) {
			http.Error(w, "the mesh view answers only to localhost", http.StatusForbidden)
			return
		}
		// A page of another site may not use it (it could take every
		// event stream): browsers say where a request comes from.
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			http.Error(w, "the mesh view answers only its own page", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// Serve listens on addr, which must be a loopback address, and serves
// view (NewHandler) until Close.
func Serve(addr string, view http.Handler) (*control.HTTPServer, error) {
	if err := config.CheckUIAddr(addr); err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	s, err := control.ServeHTTP(addr, view)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	return s, nil
}

// DeadLettersHandler serves GET /api/deadletters[?after=SEQ&n=COUNT].
func DeadLettersHandler(src func(count int, after uint64) control.DeadLettersResult) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var after uint64
		count := 0
		var err error
		if s := q.Get("after"); s != "" {
			if after, err = strconv.ParseUint(s, 10, 64); err != nil {
				http.Error(w, "after: not a sequence number", http.StatusBadRequest)
				return
			}
		}
		if s := q.Get("n"); s != "" {
			if count, err = strconv.Atoi(s); err != nil || count < 0 {
				http.Error(w, "n: not a count", http.StatusBadRequest)
				return
			}
		}
		b, _ := json.Marshal(src(count, after))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	}
}
