//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses path (the home, dir, or a file in it) when it is
// not owned by the user running troupe, or when group or others may
// change it, as ssh refuses ~/.ssh: another local user could plant a key
// or a config there. A missing path passes.
func checkPrivate(path string, dir bool) error {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	what := "file"
	if dir {
		what = "home"
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s %s is owned by uid %d, not by you (uid %d): refusing it; chown it or choose another home with -home or TROUPE_HOME", what, path, st.Uid, os.Getuid())
	}
	if mode := info.Mode().Perm(); mode&0o022 != 0 {
		return fmt.Errorf("%s %s has mode %o: group or others may change it; refusing it: chmod go-w %s", what, path, mode, path)
	}
	return nil
}

// lockFile takes an exclusive advisory lock on f without waiting; it
// reports errLockHeld when another process holds it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLockHeld
	}
	return err
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// WithUmask runs f with the process's umask set to mask.
func WithUmask(mask int, f func() error) error {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	return f()
}
