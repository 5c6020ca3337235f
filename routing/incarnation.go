package routing

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// NewIncarnation draws a random incarnation number (never 0).
func NewIncarnation() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("routing: incarnation: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]) | 1, nil
}

// agentIncarnation is what precedes the incarnation in an agent version.
const agentIncarnation = " incarnation/"

// AgentVersion returns the identify agent version that announces inc.
func AgentVersion(inc uint64) string {
	return "troupe/1" + agentIncarnation + strconv.FormatUint(inc, 16)
}

// parseAgentVersion returns the incarnation an agent version announces.
func parseAgentVersion(agent string) (uint64, bool) {
	_, hex, ok := strings.Cut(agent, agentIncarnation)
	if !ok || !strings.HasPrefix(agent, "troupe/") {
		return 0, false
	}
	inc, err := strconv.ParseUint(hex, 16, 64)
	return inc, err == nil && inc != 0
}
