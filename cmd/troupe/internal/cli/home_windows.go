//go:build windows

package cli

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// checkPrivate does not check Windows ACLs: a home under the user's
// profile is private by default.
func checkPrivate(string, bool) error { return nil }

// lockFile takes an exclusive lock on f without waiting; it reports
// errLockHeld when another process holds it.
func lockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errLockHeld
	}
	return err
}

func unlockFile(f *os.File) {
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}

// WithUmask runs f: Windows has no umask.
func WithUmask(_ int, f func() error) error { return f() }
