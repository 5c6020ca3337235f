//go:build !linux

package integration

import "errors"

// tcpSent is Linux's (TCP_INFO).
func tcpSent() (map[string]uint64, error) { return nil, errors.New("TCP_INFO is read on Linux only") }
