package gemkittest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// sharedBin is where Gemkit has go build write the binary of the checkout
// that holds dir, and a lock on it that the caller holds while it builds
// and takes its link (unlock gives it back): a folder of this user's in
// the temporary folder, named by the checkout's root, so that two
// checkouts never share one.
func sharedBin(dir string) (bin string, unlock func(), err error) {
	root, err := moduleRoot(dir)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256([]byte(root))
	folder := filepath.Join(os.TempDir(), "gemkittest-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return "", nil, err
	}
	unlock, err = lockFile(filepath.Join(folder, "lock"))
	if err != nil {
		return "", nil, fmt.Errorf("locking %s: %w", folder, err)
	}
	return filepath.Join(folder, "gemkit"), unlock, nil
}

// moduleRoot is the folder holding go.mod at or above dir.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// linkOrCopy makes to a hard link of from, or a copy where the two lie on
// different file systems.
func linkOrCopy(from, to string) error {
	if err := os.Link(from, to); err == nil {
		return nil
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
