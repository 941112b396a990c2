package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// NewKeyFile returns a Sealer using the key in the file at path: 64 hex
// characters (32 bytes), optionally followed by one newline. The file must
// not be readable or writable by group or others (mode & 0o077 == 0).
//
// If the file does not exist, NewKeyFile creates it with a new random key
// and mode 0600, creating missing parent directories with mode 0700. The
// file appears complete or not at all, and an existing file is never
// replaced, so processes that start at the same time on a new path all end
// up with the same key. Errors name the path but never show the key.
//
// The key file is meant for local development: deployed functions use
// NewKMS.
func NewKeyFile(path string) (Sealer, error) {
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKeyFile(path); err != nil {
			return nil, err
		}
		// Read back whatever is there now: ours, or another process's if it
		// got there first.
		key, err = readKeyFile(path)
	}
	if err != nil {
		return nil, err
	}
	defer clear(key)
	return NewKey(key)
}

// keyFileSize is 64 hex characters and a newline.
const keyFileSize = 2*keySize + 1

// readKeyFile returns the key in path, checking its permissions and
// content. A missing file gives an error matching fs.ErrNotExist.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("seal: open key file: %w", err)
	}
	defer f.Close()

	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("seal: stat key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("seal: key file %s is not a regular file (%v)", path, info.Mode().Type())
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("seal: key file %s has mode %#o, want no group or other access (chmod 600)", path, perm)
	}

	// Read one byte more than a valid file holds, to notice longer files
	// without reading an arbitrarily large one.
	content, err := io.ReadAll(io.LimitReader(f, keyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("seal: read key file %s: %w", path, err)
	}
	defer clear(content)
	text := bytes.TrimSuffix(content, []byte("\n"))
	if len(text) != 2*keySize {
		return nil, fmt.Errorf("seal: key file %s: want %d hex characters and an optional newline", path, 2*keySize)
	}
	key := make([]byte, keySize)
	if _, err := hex.Decode(key, text); err != nil {
		// hex's error quotes the offending byte, which is part of the
		// key, so it is not wrapped.
		return nil, fmt.Errorf("seal: key file %s: want %d hex characters, found a non-hex character", path, 2*keySize)
	}
	return key, nil
}

// createKeyFile writes a new random key to path unless a file is already
// there. It writes a temporary file beside path and hard-links it into
// place: a link, unlike a rename, fails instead of replacing a file another
// process created meanwhile, and readers never see a half-written key.
func createKeyFile(path string) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("seal: create key file directory: %w", err)
	}

	key := make([]byte, keySize)
	defer clear(key)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("seal: generate key: %w", err)
	}
	content := append(hex.AppendEncode(make([]byte, 0, keyFileSize), key), '\n')
	defer clear(content)

	// os.CreateTemp creates the file with mode 0600.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("seal: create key file: %w", err)
	}
	tmpName := tmp.Name()
	// The temporary name goes away whether or not the link succeeds; the
	// linked name keeps the content.
	defer os.Remove(tmpName)

	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("seal: write key file %s: %w", path, err)
	}

	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // another process won; the caller reads its key
		}
		return fmt.Errorf("seal: create key file %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes the new directory entry durable where the platform allows.
// Failure is ignored: some systems cannot sync a directory, and the key
// file is a development convenience, not a production key store.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
