package extension

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Uninstall takes an entry out of the extensions folder: apart from the
// install, since it must keep what another entry of the same extension
// still needs (its enablement rules and consent), and remove a link the
// person made without following it.

// Uninstall removes an installed extension, its enablement rules and its
// consent record. Like Gemini CLI it also accepts the source the extension
// was installed from. A linked extension's source folder is never touched.
func (s *Store) Uninstall(name string) error {
	in, err := s.Get(name)
	if err != nil {
		if bySource := s.findBySource(name); bySource != nil {
			in, err = bySource, nil
		}
	}
	if err != nil {
		return err
	}
	names := []string{in.Name}
	if m := in.Manifest(); m != nil && m.Name != in.Name && !s.otherCarries(in, m.Name) {
		names = append(names, m.Name)
	}
	// A hold in Gemini CLI goes with the extension: the rules it added
	// under other names too.
	if _, err := s.ReleaseInGemini(in.Name); err != nil {
		return err
	}
	var cache string
	if in.Extension != nil {
		cache = s.digestCacheOf(in.Extension.Dir)
	}
	if err := s.removeEntry(in, names); err != nil {
		return err
	}
	if cache != "" {
		// It only ever spares hashing; one left behind is harmless.
		_ = os.Remove(cache)
	}
	for _, n := range names {
		if err := s.ForgetConsent(n); err != nil {
			return err
		}
	}
	return nil
}

// otherCarries reports whether an entry other than in holds an extension
// called name: removing a copied folder must keep the enablement rules
// and consent of the extension it duplicated.
func (s *Store) otherCarries(in *Installed, name string) bool {
	all, err := s.List()
	if err != nil {
		return true
	}
	for _, o := range all {
		if o.Entry != in.Entry && o.Manifest() != nil && o.Manifest().Name == name {
			return true
		}
	}
	return false
}

// removeEntry deletes an entry of the extensions folder and the
// enablement rules of names, under the lock.
func (s *Store) removeEntry(in *Installed, names []string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := os.Lstat(in.Entry)
	if err != nil {
		return fmt.Errorf("uninstall %s: %w", in.Name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A symlink made by hand: remove the link, not what it points at.
		if err := os.Remove(in.Entry); err != nil {
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
	} else {
		// Rename first, so the name is free at once and a failure while
		// deleting leaves a staging folder rather than half an extension.
		trash, err := s.newStaging("remove")
		if err != nil {
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
		if err := os.Rename(in.Entry, filepath.Join(trash, "old")); err != nil {
			os.Remove(trash)
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
		if err := fsutil.RemoveTree(trash); err != nil {
			return fmt.Errorf("uninstall %s: removed, but could not delete %s: %w", in.Name, trash, err)
		}
	}
	for _, n := range names {
		if err := s.forgetEnablement(n); err != nil {
			return err
		}
	}
	return nil
}
