package daemon

import (
	"context"
	"net"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/chat"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// chat is the daemon side of 'troupe chat': the user's actor runs in the
// daemon and the control connection carries the lines.
func (d *Daemon) chat(ctx context.Context, req control.Request, conn net.Conn) (any, func(), error) {
	if err := chat.CheckName("nick", req.Nick); err != nil {
		return nil, nil, err
	}
	if err := chat.CheckName("room", req.Room); err != nil {
		return nil, nil, err
	}
	return struct{}{}, func() { _ = chat.Run(ctx, d.node, req.Nick, req.Room, daemonStopNote, conn, conn) }, nil
}

// daemonStopNote is the last line of a chat session that the daemon
// ended because it is stopping.
const daemonStopNote = "! the daemon is stopping"
