package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
)

// The files in a home directory.
const (
	keyFileName    = "identity.key"
	configFileName = "config.json"
	lockFileName   = "lock"
	socketName     = "troupe.sock"
)

// Home is a Troupe home directory ($TROUPE_HOME, default ~/.troupe).
type Home string

// DefaultHome is the home the commands use without -home: $TROUPE_HOME,
// else ~/.troupe, else .troupe in the working directory.
func DefaultHome() string {
	if h := os.Getenv("TROUPE_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".troupe")
	}
	return ".troupe"
}

// Path is the path of the file called name in the home.
func (h Home) Path(name string) string { return filepath.Join(string(h), name) }

// KeyFile is the peer's identity key (identity.key).
func (h Home) KeyFile() string { return h.Path(keyFileName) }

// ConfigFile is the daemon's configuration (config.json).
func (h Home) ConfigFile() string { return h.Path(configFileName) }

// Socket is the daemon's control socket (troupe.sock).
func (h Home) Socket() string { return h.Path(socketName) }

// Ensure creates the home directory (0700) and a default config.json when
// they are missing, and checks that the directory is writable.
func (h Home) Ensure() (config.Config, error) {
	if err := os.MkdirAll(string(h), 0o700); err != nil {
		return config.Config{}, fmt.Errorf("cannot create home %s: %w; choose another with -home or TROUPE_HOME", h, err)
	}
	if err := h.CheckPrivate(); err != nil {
		return config.Config{}, err
	}
	probe, err := os.CreateTemp(string(h), ".probe-*")
	if err != nil {
		return config.Config{}, fmt.Errorf("home %s is not writable: %w; choose another with -home or TROUPE_HOME", h, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	cfg, exists, err := config.Load(h.ConfigFile())
	if err != nil || exists {
		return cfg, err
	}
	if err := config.Write(h.ConfigFile(), cfg); err != nil {
		return cfg, fmt.Errorf("writing %s: %w", h.ConfigFile(), err)
	}
	return cfg, nil
}

// CheckPrivate refuses a home, or its key or config file, that another
// user owns or may change (see checkPrivate in home_unix.go).
func (h Home) CheckPrivate() error {
	if err := checkPrivate(string(h), true); err != nil {
		return err
	}
	for _, f := range []string{h.KeyFile(), h.ConfigFile()} {
		if err := checkPrivate(f, false); err != nil {
			return err
		}
	}
	return nil
}

// Open ensures the home and takes its lock: what a daemon or an embedded
// chat peer does before it starts.
func (h Home) Open() (config.Config, func(), error) {
	cfg, err := h.Ensure()
	if err != nil {
		return cfg, nil, err
	}
	unlock, err := h.Lock()
	return cfg, unlock, err
}

// ErrLocked is returned by Lock when another process holds the home;
// errLockHeld by lockFile when another process holds a file's lock.
var (
	ErrLocked   = errors.New("home in use")
	errLockHeld = errors.New("lock held by another process")
)

// Lock takes the home's lock file for this process (an advisory flock that
// the kernel releases when the process dies, so a crash never leaves a
// stale lock). It fails with ErrLocked, naming the holder's pid, when
// another daemon or embedded chat peer uses the home.
func (h Home) Lock() (unlock func(), err error) {
	f, err := os.OpenFile(h.Path(lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("home %s: %w", h, err)
	}
	if err := lockFile(f); err != nil {
		if !errors.Is(err, errLockHeld) {
			f.Close()
			return nil, fmt.Errorf("home %s: locking: %w", h, err)
		}
		b, _ := os.ReadFile(f.Name())
		f.Close()
		holder := strings.TrimSpace(string(b))
		if _, perr := strconv.Atoi(holder); perr != nil {
			holder = "unknown"
		}
		return nil, fmt.Errorf("%w: another troupe process (pid %s) runs on %s; stop it or choose another home with -home or TROUPE_HOME", ErrLocked, holder, h)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = f.Truncate(0)
		unlockFile(f)
		f.Close()
	}, nil
}
