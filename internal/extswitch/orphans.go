package extswitch

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// An extension uninstalled by Gemini CLI itself (`gemini extensions
// uninstall`) leaves behind what gemkit keeps of it: the switch's names
// in mcp.excluded and hooksConfig.disabled and its own hooks in Gemini
// CLI's settings, its records (the switch, consent, a hold), the
// packages pinned for its servers. Gemini CLI knows none of them.
// Doctor finds these orphans and `gemkit extensions uninstall NAME`
// removes them (ForgetOrphan).

// orphanParts are, in words, what gemkit keeps of name, an extension that
// is not installed; none when it keeps nothing.
func (s *Switch) orphanParts(name string) []string {
	var parts []string
	if c, err := s.Store.ServerChoice(name); err == nil && (c.Switched || !c.Widening.Empty() || len(c.HookWidening) > 0) {
		parts = append(parts, "its switch (and the names it put in Gemini CLI's settings)")
	}
	if holds, err := s.Store.Holds(); err == nil {
		if _, ok := holds[name]; ok {
			parts = append(parts, "its hold in Gemini CLI")
		}
	}
	if dir := filepath.Join(s.packagesRoot(), name); isDir(dir) {
		parts = append(parts, fmt.Sprintf("the packages pinned for its servers (%s, in %s)", sizeWords(treeBytes(dir)), dir))
	}
	return parts
}

// orphanNames are the extensions gemkit keeps something of that are not
// installed: by their switch's records and by their pinned packages.
func (s *Switch) orphanNames(all []*extension.Installed) []string {
	installed := map[string]bool{}
	for _, in := range all {
		installed[in.Name] = true
		if m := in.Manifest(); m != nil {
			installed[m.Name] = true
		}
	}
	var names []string
	add := func(n string) {
		if n != "" && !installed[n] && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if sw, err := s.Store.Switches(); err == nil {
		for n := range sw.Choices {
			add(n)
		}
	}
	if holds, err := s.Store.Holds(); err == nil {
		for n := range holds {
			add(n)
		}
	}
	if entries, err := os.ReadDir(s.packagesRoot()); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				add(e.Name())
			}
		}
	}
	slices.Sort(names)
	return slices.DeleteFunc(names, func(n string) bool { return len(s.orphanParts(n)) == 0 })
}

// OrphanFindings are doctor's findings for the orphans of all.
func (s *Switch) OrphanFindings(all []*extension.Installed) []Finding {
	var fs []Finding
	for _, n := range s.orphanNames(all) {
		fs = append(fs, Finding{Level: "warning", Extension: n,
			Message: "is not installed (Gemini CLI's own uninstall removes its folder, not what gemkit keeps of it), yet gemkit keeps " + strings.Join(s.orphanParts(n), "; "),
			Fix:     "`gemkit extensions uninstall " + n + "` removes them"})
	}
	return fs
}

// Orphan is what ForgetOrphan removed.
type Orphan struct {
	// Parts are, in words, what gemkit kept of it; none when nothing.
	Parts []string
	// Off is its switch undone, nil when it was not switched.
	Off *Off
	// TreesErr and RefusalsErr are why its pinned packages, or what
	// the sandbox refused it, could not be removed (the rest was).
	TreesErr, RefusalsErr error
}

// ForgetOrphan removes what gemkit keeps of name, an extension that is
// not installed; its Parts are none when it kept nothing.
func (s *Switch) ForgetOrphan(name string) (Orphan, error) {
	o := Orphan{Parts: s.orphanParts(name)}
	if len(o.Parts) == 0 {
		return o, nil
	}
	var err error
	if o.Off, err = s.Forget(name); err != nil {
		return o, err
	}
	if _, err := s.Host.Release(name); err != nil {
		return o, err
	}
	if err := s.Store.ForgetConsent(name); err != nil {
		return o, err
	}
	o.TreesErr = s.RemoveTrees(name)
	o.RefusalsErr = ForgetRefusals(name)
	return o, nil
}

// ForgetRefusals takes the extension name's refusals out of the file
// gemkit mcp keeps them in: it was uninstalled or updated, and what was
// refused belongs to what it was.
func ForgetRefusals(name string) error {
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return err
	}
	return extmcp.ForgetRefusals(path, name)
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// treeBytes is the size of the regular files under dir.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// sizeWords is n bytes in megabytes, or kilobytes below one.
func sizeWords(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d kB", (n+1023)>>10)
	}
	return fmt.Sprintf("%d MB", n>>20)
}
