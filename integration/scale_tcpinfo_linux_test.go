package integration

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// tcpSent returns, per TCP socket of this process (keyed by its inode),
// the bytes the kernel sent on it (TCP_INFO's bytes_sent, retransmits
// included): the peers' wire bytes, without the bytes a system call
// writes elsewhere (the Go runtime's eventfd wakeups count some 100
// bytes a second per node in /proc/self/io's wchar).
func tcpSent() (map[string]uint64, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || len(link) < 8 || link[:7] != "socket:" {
			continue
		}
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			continue // not TCP, or closed meanwhile
		}
		out[link] = info.Bytes_sent
	}
	return out, nil
}
