package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path through a temporary file in the same
// folder, synced before it is renamed over path, so that a reader never
// sees half a file and a crash leaves the old file whole. The file gets
// mode perm. The temporary name starts with a dot and ends in ".tmp", so
// that it matches no pattern a reader of the folder looks for.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return writeAtomic(path, data, perm, nil, true)
}

// PublishFile writes data to path as [WriteFileAtomic] does (a reader
// sees the old file or the new one, never half of one), but does not make
// it durable: nothing is synced. It is for files that describe a running
// process, such as an IDE server's discovery and lock files, which mean
// nothing once a crash has ended that process, and which clients wait
// for: a sync of the file and of its folder costs milliseconds, and
// hundreds of them when other writes are queued on the disk.
func PublishFile(path string, data []byte, perm fs.FileMode) error {
	return writeAtomic(path, data, perm, nil, false)
}

// ReplaceFile writes data to path atomically, as [WriteFileAtomic], keeping
// the mode of the file it replaces and, where it may, its owner (a file
// edited under sudo stays its owner's). A new file gets mode 0644 and the
// folders it needs. Anything but a regular file at path is refused.
func ReplaceFile(path string, data []byte) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case err == nil:
		return writeAtomic(path, data, fi.Mode().Perm(), func(f *os.File) { keepOwner(f, fi) }, true)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return writeAtomic(path, data, 0o644, nil, true)
	default:
		return err
	}
}

func writeAtomic(path string, data []byte, perm fs.FileMode, prepare func(*os.File), durable bool) error {
	dir := filepath.Dir(path)
	// The errors of os name the operation and the file already.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if prepare != nil {
		prepare(tmp)
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	if !durable {
		return nil
	}
	// Make the rename itself durable; without this a crash can bring back
	// the old file (or none) although the write had returned.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
