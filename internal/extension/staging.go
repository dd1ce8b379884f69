package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

func cleanSubdir(sub string) (string, error) {
	if sub == "" {
		return "", nil
	}
	c := filepath.Clean(filepath.FromSlash(sub))
	if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("--path %q must be a folder inside the source", sub)
	}
	if c == "." {
		return "", nil
	}
	return filepath.ToSlash(c), nil
}

// newStaging makes a temporary folder inside the extensions folder, so the
// final rename stays on one file system.
func (s *Store) newStaging(kind string) (string, error) {
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		return "", fmt.Errorf("create the extensions folder: %w", err)
	}
	s.sweepStaging()
	d, err := os.MkdirTemp(s.Dir(), stagingPrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("create a staging folder: %w", err)
	}
	return d, nil
}

// staleStaging is how old a staging folder must be before a later install
// deletes it: old enough that no install can still be using it.
const staleStaging = time.Hour

// sweepStaging deletes staging folders that a killed gemkit left behind,
// so they do not pile up (Gemini CLI would warn about each one).
func (s *Store) sweepStaging() {
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		return
	}
	for _, e := range entries {
		if !isStagingName(e.Name()) || !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleStaging {
			os.RemoveAll(filepath.Join(s.Dir(), e.Name()))
		}
	}
}

// checkFree fails when an extension called name is installed.
func (s *Store) checkFree(name string) error {
	if _, err := os.Lstat(filepath.Join(s.Dir(), name)); err == nil {
		return fmt.Errorf("an extension called %q is already installed; use `gemkit extensions update %s`, or uninstall it first", name, name)
	}
	if in, err := s.Get(name); err == nil {
		return fmt.Errorf("an extension called %q is already installed (as %s); uninstall it first", name, in.Name)
	}
	return nil
}

// commit renames the staged folder into place under the lock. It is the
// point of no return, so it gives up first if ctx has ended (an
// interrupted install must not complete). Enablement rules left from an
// earlier extension of that name are dropped, so a new install is enabled
// everywhere, as Gemini CLI's install enables it.
func (s *Store) commit(ctx context.Context, staged, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	dest := filepath.Join(s.Dir(), name)
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("an extension called %q was installed meanwhile; nothing was changed", name)
	}
	if err := s.forgetEnablement(name); err != nil {
		return err
	}
	if err := os.Rename(staged, dest); err != nil {
		return fmt.Errorf("move %s into place: %w", name, err)
	}
	return nil
}

// errNoExchange says that the file system cannot swap two entries in one
// step.
var errNoExchange = errors.New("no atomic exchange on this file system")

// swap replaces entry with staged in one step: the two are exchanged
// with renameat2(RENAME_EXCHANGE), so there is no moment at which the
// extension is missing, and staged then holds the old version, which is
// deleted with the staging folder. A file system without the exchange
// gets two renames instead (old aside, new in place), and a failure of
// the second puts the old version back.
func (s *Store) swap(staged, entry, stage string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	err = exchange(staged, entry)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errNoExchange) {
		return fmt.Errorf("put the new version in place: %w", err)
	}
	old := filepath.Join(stage, "previous")
	if err := os.Rename(entry, old); err != nil {
		return fmt.Errorf("move the old version aside: %w", err)
	}
	if err := os.Rename(staged, entry); err != nil {
		if rerr := os.Rename(old, entry); rerr != nil {
			return fmt.Errorf("install the new version: %v; and restoring the old one failed: %v (it is in %s)", err, rerr, old)
		}
		return fmt.Errorf("install the new version: %w; the old version is back in place", err)
	}
	return nil
}

// writeMetadata writes the install metadata, readable by the user alone
// when the source URL carries a password or token.
func writeMetadata(dir string, md *InstallMetadata) error {
	data, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if RedactSource(md.Source) != md.Source {
		perm = 0o600
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, InstallMetadataFile), data, perm)
}
