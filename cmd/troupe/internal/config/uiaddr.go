package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// IsLocalHost reports whether an HTTP Host header names this machine:
// localhost or a loopback address, with any port.
func IsLocalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckUIAddr checks that addr (host:port) listens on a loopback address
// only: the view shows the mesh to whoever can reach it.
func CheckUIAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("the port must be a number from 0 to 65535")
	}
	if !IsLocalHost(host) {
		return fmt.Errorf("%s is not a loopback address: the view shows the mesh to whoever reaches it", host)
	}
	return nil
}
