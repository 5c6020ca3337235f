package main

import (
	"strings"
	"testing"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/chat"
)

// TestChatHelpListsCommands: chat -h and /help list every slash command
// the chat handles.
func TestChatHelpListsCommands(t *testing.T) {
	var out, errOut strings.Builder
	chatCmd([]string{"-h"}, strings.NewReader(""), &out, &errOut)
	help := out.String() + errOut.String()
	for _, cmd := range []string{"/msg", "/who", "/rooms", "/join", "/nick", "/stats", "/help", "/quit"} {
		if !strings.Contains(help, cmd) || !strings.Contains(chat.Commands, cmd) {
			t.Fatalf("chat -h or /help lacks %s:\n%s", cmd, help)
		}
	}
}
