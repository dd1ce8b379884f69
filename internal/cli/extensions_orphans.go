package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// An extension uninstalled by Gemini CLI itself (`gemini extensions
// uninstall`) leaves behind what gemkit keeps of it: the switch's names
// in mcp.excluded and hooksConfig.disabled and its own hooks in Gemini
// CLI's settings, its records (the switch, consent, a hold), the
// packages pinned for its servers. Gemini CLI knows none of them.
// Doctor finds these orphans and `gemkit extensions uninstall NAME`
// removes them.

// orphanParts are, in words, what gemkit keeps of name, an extension that
// is not installed; none when it keeps nothing.
func orphanParts(st *extension.Store, name string) []string {
	var parts []string
	if c, err := st.ServerChoice(name); err == nil && (c.Switched || !c.Widening.Empty() || len(c.HookWidening) > 0) {
		parts = append(parts, "its switch (and the names it put in Gemini CLI's settings)")
	}
	if holds, err := st.Holds(); err == nil {
		if _, ok := holds[name]; ok {
			parts = append(parts, "its hold in Gemini CLI")
		}
	}
	if dir := filepath.Join(packagesRoot(st), name); isDir(dir) {
		parts = append(parts, fmt.Sprintf("the packages pinned for its servers (%s, in %s)", sizeWords(treeBytes(dir)), dir))
	}
	return parts
}

// orphanNames are the extensions gemkit keeps something of that are not
// installed: by their switch's records and by their pinned packages.
func orphanNames(st *extension.Store, all []*extension.Installed) []string {
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
	if sw, err := st.Switches(); err == nil {
		for n := range sw.Choices {
			add(n)
		}
	}
	if holds, err := st.Holds(); err == nil {
		for n := range holds {
			add(n)
		}
	}
	if entries, err := os.ReadDir(packagesRoot(st)); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				add(e.Name())
			}
		}
	}
	slices.Sort(names)
	return slices.DeleteFunc(names, func(n string) bool { return len(orphanParts(st, n)) == 0 })
}

// orphanFindings are doctor's findings for the orphans of all.
func orphanFindings(st *extension.Store, all []*extension.Installed) []finding {
	var fs []finding
	for _, n := range orphanNames(st, all) {
		fs = append(fs, finding{Level: "warning", Extension: n,
			Message: "is not installed (Gemini CLI's own uninstall removes its folder, not what gemkit keeps of it), yet gemkit keeps " + strings.Join(orphanParts(st, n), "; "),
			Fix:     "`gemkit extensions uninstall " + n + "` removes them"})
	}
	return fs
}

// forgetOrphan removes what gemkit keeps of name, an extension that is
// not installed, and says what it removed on a's output; removed is
// false when it kept nothing.
func forgetOrphan(a *app, st *extension.Store, name string) (removed bool, err error) {
	parts := orphanParts(st, name)
	if len(parts) == 0 {
		return false, nil
	}
	if err := forgetServers(a, st, name); err != nil {
		return false, err
	}
	if _, err := st.ReleaseInGemini(name); err != nil {
		return false, err
	}
	if err := st.ForgetConsent(name); err != nil {
		return false, err
	}
	removeTrees(a, st, name)
	if err := forgetRefusals(name); err != nil {
		fmt.Fprintf(a.Err, "gemkit: forgetting what the sandbox refused %s's servers: %v\n", extension.Printable(name), err)
	}
	fmt.Fprintf(a.Out, "%s is not installed (Gemini CLI's own uninstall removes its folder, not what gemkit keeps of it); removed %s\n", extension.Printable(name), strings.Join(parts, "; "))
	return true, nil
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

// errNotInstalled says whether err is the store's "not installed".
func errNotInstalled(err error) bool { return errors.Is(err, extension.ErrNotInstalled) }
