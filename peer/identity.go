package peer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// ErrInsecureKeyFile reports a key file that others than its owner may
// read or write.
var ErrInsecureKeyFile = errors.New("peer: key file open to others")

// LoadOrCreateKey reads a private key from path (libp2p's protobuf
// encoding), creating an Ed25519 key there, with mode 0600, when the file
// does not exist. A key file that others than its owner may read or write
// is refused, as ssh refuses one (chmod 600 it). Two processes that create
// the same file at once end up with the same key: the file appears whole
// or not at all, and the one that finds it taken reads it.
func LoadOrCreateKey(path string) (crypto.PrivKey, error) {
	if path == "" {
		return nil, errors.New("peer: key file: empty path")
	}
	k, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k, _, err = crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	b, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("peer: key file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".identity-*")
	if err != nil {
		return nil, fmt.Errorf("peer: key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return nil, fmt.Errorf("peer: key file: %w", err)
	}
	// A hard link appears at path whole, and fails if path exists.
	err = os.Link(tmp.Name(), path)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		// No hard links here (vfat, some network file systems): create
		// the file in place, exclusively; a reader racing with this may
		// find it incomplete and fail, which a restart mends.
		err = writeExclusive(path, b)
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return readKey(path) // another process made it first
	case err != nil:
		return nil, fmt.Errorf("peer: key file: %w", err)
	}
	return k, nil
}

// writeExclusive creates path, which must not exist, holding b.
func writeExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	return errors.Join(werr, f.Sync(), f.Close())
}

// readKey reads the key in path, refusing a file that others may read.
func readKey(path string) (crypto.PrivKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("peer: key file: %w", err) // may wrap fs.ErrNotExist
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("peer: key file: %w", err)
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%w: %s: mode %o lets others read or change the key: chmod 600 it", ErrInsecureKeyFile, path, mode)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("peer: key file: %w", err)
	}
	k, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("peer: key file %s: %w", path, err)
	}
	return k, nil
}
