package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

func cleanSubdir(sub string) (string, error) {
	if sub == "" {
		return "", nil
	}
	c := filepath.Clean(filepath.FromSlash(sub))
	if !filepath.IsLocal(c) {
		return "", subdirError("the sub-folder %q must be a folder inside the source", sub)
	}
	if c == "." {
		return "", nil
	}
	return filepath.ToSlash(c), nil
}

// stagingDir is where installs, updates and uninstalls prepare their
// folders: <home>/.gemini/gemkit/staging. Gemini CLI loads every folder
// of ~/.gemini/extensions (hidden ones too, warning "Skipping extension
// in …" for each it cannot read) but never looks into ~/.gemini/gemkit,
// and the two are on one file system in every usual set-up, so the final
// rename into the extensions folder stays a single atomic step.
func (s *Store) stagingDir() string { return filepath.Join(s.stateDir(), "staging") }

// newStaging makes a temporary folder for one operation of kind
// (install, update, link, remove), tagged with this process's id so that
// a later command can tell a live operation from a killed one. When the
// staging folder is on another file system than the extensions folder
// (an extensions folder that is a symlink to another disk), it stages
// inside the extensions folder instead, as a hidden folder, since only a
// rename within one file system is atomic.
func (s *Store) newStaging(kind string) (string, error) {
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		return "", fmt.Errorf("create the extensions folder: %w", err)
	}
	s.SweepStaging()
	parent, prefix := s.stagingDir(), ""
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("create the staging folder: %w", err)
	}
	if !sameFileSystem(parent, s.Dir()) {
		parent, prefix = s.Dir(), stagingPrefix
	}
	d, err := os.MkdirTemp(parent, fmt.Sprintf("%s%s-%d-", prefix, kind, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("create a staging folder: %w", err)
	}
	return d, nil
}

// Staging folders whose process cannot be checked (folders named by a
// gemkit older than the pid tag, or a pid that was reused) are deleted
// once this old: a gemkit of an earlier version may still be using a
// young one, but none runs for this long.
const (
	staleUntagged = 10 * time.Minute
	staleTagged   = 24 * time.Hour
)

// SweepStaging deletes the staging folders of operations that can no
// longer finish: those whose process has exited (a SIGKILLed install),
// and, in the extensions folder, the untagged ".gemkit-*" folders that
// earlier gemkit versions staged in, which make Gemini CLI warn on every
// command. Every command that opens the store calls it; it costs one
// directory read when there is nothing to do. It returns the folders it
// deleted.
func (s *Store) SweepStaging() []string {
	removed := sweepStagingIn(s.stagingDir(), "")
	return append(removed, sweepStagingIn(s.Dir(), stagingPrefix)...)
}

func sweepStagingIn(dir, prefix string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		age := time.Since(fi.ModTime())
		pid := stagingPID(strings.TrimPrefix(e.Name(), prefix))
		switch {
		case pid == os.Getpid():
			continue
		case pid > 0 && processAlive(pid) && age < staleTagged:
			continue
		case pid <= 0 && age < staleUntagged:
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fsutil.RemoveTree(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// stagingPID reads the process id from a staging folder name
// (kind-PID-random); 0 when there is none.
func stagingPID(name string) int {
	parts := strings.Split(name, "-")
	if len(parts) != 3 {
		return 0
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// checkFree fails when an extension called name is installed, saying what
// frees the name: for a linked extension, which update leaves as it is,
// uninstalling it (which removes the link, not its folder).
func (s *Store) checkFree(name string) error {
	for _, parent := range []string{s.Dir(), s.PluginsDir()} {
		if err := s.checkFreeIn(parent, name); err != nil {
			return err
		}
	}
	if in, err := s.Get(name); err == nil {
		return fmt.Errorf("an extension called %q is already installed (as %s); uninstall it first", name, in.Name)
	}
	return nil
}

// checkFreeIn is checkFree of the entry name of the folder parent.
func (s *Store) checkFreeIn(parent, name string) error {
	entry := filepath.Join(parent, name)
	if _, err := os.Lstat(entry); err == nil {
		if md, err := readMetadata(entry); err == nil && md != nil && md.Type == SourceLink {
			return fmt.Errorf("an extension called %q is already linked to %s; `gemkit extensions uninstall %s` unlinks it first (the folder stays)", name, md.Source, name)
		}
		return fmt.Errorf("an extension called %q is already installed; use `gemkit extensions update %s`, or uninstall it first", name, name)
	}
	return nil
}

// commit renames the staged folder into place under the lock. It is the
// point of no return, so it gives up first if ctx has ended (an
// interrupted install must not complete). Enablement rules left from an
// earlier extension of that name are dropped, so a new install is enabled
// everywhere, as Gemini CLI's install enables it.
func (s *Store) commit(ctx context.Context, staged, parent, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	dest := filepath.Join(parent, name)
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
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	// The staged folder holds the extension's files: a link it ships
	// under this name is replaced, not written through.
	return root.WriteFileAtomic(InstallMetadataFile, data, perm)
}
