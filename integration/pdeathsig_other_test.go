//go:build !linux

package integration

import "os/exec"

// dieWithTest does nothing: only Linux kills a child with its parent.
func dieWithTest(*exec.Cmd) {}
