package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/permission"
	"golang.org/x/sys/unix"
)

// The lock files that keep a placeholder's lifetime (placeholder_linux.go):
// their private folder, one file a guarded path, locked shared by every
// run that binds the path, holding the identity of the placeholder made,
// and swept when no run holds them and they name no placeholder.

// lockDir returns the folder of the placeholder locks, made private if
// it is new; one that another user owns or others may enter is refused,
// since whoever can write a lock could hold a placeholder or name one.
// The folder is the account's home folder's ~/.config/gemkit/placeholders
// (permission.AccountHome), which neither HOME nor XDG_CONFIG_HOME moves:
// gemkit processes started with different environments must still see
// each other's locks. Where it cannot be made (no home folder of this
// user's, or one it may not write) the locks live in
// /tmp/gemkit-placeholders-UID, the same for every gemkit process of the
// user.
func (l *Launcher) lockDir() (string, error) {
	if l.LockDir != "" {
		return privateDir(l.LockDir)
	}
	if home := permission.AccountHome(); home != "" {
		dir, err := privateDir(gemkitdir.Placeholders(home))
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, unix.EROFS) {
			return dir, err
		}
	}
	return privateDir(gemkitdir.TempPlaceholders(os.Getuid()))
}

// privateDir makes dir, the folder of the placeholder locks, and checks
// it as every private folder of gemkit's is (PrivateDir).
func privateDir(dir string) (string, error) {
	if err := PrivateDir(permission.AccountHome(), dir); err != nil {
		return "", fmt.Errorf("sandbox: the folder of the placeholder locks: %w", err)
	}
	return dir, nil
}

// lockName is the lock file of path: a hash, so that the folder says
// nothing of where a person works. Its contents (record) name the path.
func lockName(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock")
}

// lockShared opens the lock file name of path and locks it shared. For a
// path that existed when the rules were made (absent false) a missing
// lock file means the path is the user's (nil, nil), unless the path has
// gone meanwhile, which makes it absent.
//
// The run that gives a lock back last removes its file, so a lock granted
// on a file the name no longer leads to was given back meanwhile: it is
// opened again.
func lockShared(name, path string, absent bool) (*os.File, error) {
	for {
		f, err := openLock(name, path, absent)
		if f == nil || err != nil {
			return f, err
		}
		if err := flock(f, unix.LOCK_SH); err != nil {
			f.Close()
			return nil, fmt.Errorf("sandbox: locking %s: %w", path, err)
		}
		if stillNamed(f, name) {
			return f, nil
		}
		f.Close()
	}
}

func openLock(name, path string, absent bool) (*os.File, error) {
	flags := os.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	f, err := os.OpenFile(name, flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if !absent {
			if _, err := os.Lstat(path); err == nil {
				return nil, nil
			}
		}
		f, err = os.OpenFile(name, flags|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: the lock of %s: %w", path, err)
	}
	return f, nil
}

// stillNamed reports whether name still leads to the file f has open.
func stillNamed(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(name)
	return err == nil && os.SameFile(a, b)
}

// readRecord reads the record of a lock file: the identity of the
// placeholder last made and the path it is at ("" in the lock files of
// versions that did not write it). ok is false for an unreadable record;
// an empty file (no placeholder was ever made through it) gives a zero
// identity and ok.
func readRecord(f *os.File) (id placeholderID, path string, made, ok bool) {
	rec, err := io.ReadAll(io.NewSectionReader(f, 0, 4096+unix.PathMax))
	if err != nil {
		return id, "", false, false
	}
	if len(rec) == 0 {
		return id, "", false, true
	}
	line, rest, _ := strings.Cut(string(rec), "\n")
	if _, err := fmt.Sscanf(line, "%d %d %d %d", &id.dev, &id.ino, &id.ctimeSec, &id.ctimeNsec); err != nil {
		return id, "", true, false
	}
	return id, strings.TrimSuffix(rest, "\n"), true, true
}

// staleLegacyLock is how old a lock file of a version that did not record
// the path must be for sweepLocks to remove it. Its placeholder, if a
// killed process left one, is then taken for the user's: still bound
// read-only, never removed.
const staleLegacyLock = 7 * 24 * time.Hour

// sweepLocks removes the lock files no run holds that name no placeholder
// left in place: those of runs whose process was killed before it gave
// them back (removing their placeholder first, if it is still the very
// one and empty), and those versions before this one kept for every
// protected name of every workspace. A lock file another run holds, in
// any process, is skipped without waiting.
func (l *Launcher) sweepLocks(dir string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		name := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(name, os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if flock(f, unix.LOCK_EX|unix.LOCK_NB) == nil {
			_, path, made, ok := readRecord(f)
			fi, err := f.Stat()
			switch {
			case path != "" && lockName(dir, path) != name:
				// Not the lock of the path it names: left alone.
			case ok && made && path == "" && err == nil && now.Sub(fi.ModTime()) > staleLegacyLock:
				if stillNamed(f, name) {
					_ = os.Remove(name)
				}
			case ok:
				l.retire(f, path)
			}
		}
		f.Close()
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
