package testutil

import (
	"io"
	"log/slog"
)

// QuietLogger returns a logger that formats its records and discards them.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
