package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

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

// TestCancelable: a pipe's reader becomes a chat.Canceler whose Cancel
// ends a blocked Read; a regular file (whose reads end by themselves) and
// a reader that is no file stay as they are.
func TestCancelable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, release := cancelable(r)
	defer release()
	c, ok := in.(chat.Canceler)
	if !ok {
		t.Fatalf("a pipe: %T, not a chat.Canceler", in)
	}
	read := make(chan error, 1)
	go func() { _, err := in.Read(make([]byte, 1)); read <- err }()
	c.Cancel()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("a cancelled Read read something")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Cancel did not end the blocked Read")
	}
	f, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if in, _ := cancelable(f); in != io.Reader(f) {
		t.Fatalf("a regular file: %T", in)
	}
	sr := strings.NewReader("")
	if in, _ := cancelable(sr); in != io.Reader(sr) {
		t.Fatalf("a strings.Reader: %T", in)
	}
}
