package claudeswitch

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Digest is what the plugin's folder holds, by slash path: each regular
// file's sha256 and mode, each link's target, each folder.
type Digest map[string]string

// Sum is one sha256 of the whole Digest, for a record's words.
func (d Digest) Sum() string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q %s\n", k, d[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Changes say what changed from d to now: the files added, removed and
// changed, a few of each by name; "" when nothing did.
func (d Digest) Changes(now Digest) string {
	var added, removed, changed []string
	for k, v := range now {
		was, ok := d[k]
		switch {
		case !ok:
			added = append(added, k)
		case was != v:
			changed = append(changed, k)
		}
	}
	for k := range d {
		if _, ok := now[k]; !ok {
			removed = append(removed, k)
		}
	}
	var out []string
	for _, c := range []struct {
		word  string
		names []string
	}{{"added", added}, {"removed", removed}, {"changed", changed}} {
		if len(c.names) == 0 {
			continue
		}
		sort.Strings(c.names)
		shown := c.names
		more := ""
		if len(shown) > 5 {
			shown, more = shown[:5], fmt.Sprintf(" and %d more", len(c.names)-5)
		}
		out = append(out, c.word+" "+extension.Printable(strings.Join(shown, ", "))+more)
	}
	return strings.Join(out, "; ")
}

// ReadDigest reads the Digest of the folder r, refusing a link that
// leads out of it: Claude Code follows it, and the twin's copy would
// not hold what it leads to.
func ReadDigest(r *fsutil.Root) (Digest, error) {
	d := Digest{}
	err := r.Walk(".", func(dir *fsutil.Root, rel string, e fs.DirEntry) error {
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			d[rel] = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := dir.Readlink(e.Name())
			if err != nil {
				return err
			}
			if linksOut(rel, link) {
				return fmt.Errorf("%s is a link to %s, out of the plugin's folder: Claude Code follows it, gemkit's copy would not hold what it leads to; not switched", r.Path(rel), extension.Printable(link))
			}
			d[rel] = "link " + link
		case info.Mode().IsRegular():
			f, err := dir.Open(e.Name())
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
			d[rel] = fmt.Sprintf("%s %o", hex.EncodeToString(h.Sum(nil)), info.Mode().Perm())
		}
		return nil
	})
	return d, err
}

// linksOut reports whether the link at rel, to target, leads out of
// the folder.
func linksOut(rel, target string) bool {
	if path.IsAbs(target) || filepath.IsAbs(target) {
		return true
	}
	t := path.Clean(path.Join(path.Dir(rel), target))
	return t == ".." || strings.HasPrefix(t, "../")
}

// copyTree copies the folder from into the new folder dst, leaving out
// what skip names, through Roots: files with their modes, links as
// links (ReadDigest refused those leading out).
func copyTree(from *fsutil.Root, dst string, skip func(rel string) bool) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	to, err := fsutil.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	return from.Walk(".", func(dir *fsutil.Root, rel string, e fs.DirEntry) error {
		if skip != nil && skip(rel) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return to.Mkdir(rel, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := dir.Readlink(e.Name())
			if err != nil {
				return err
			}
			if linksOut(rel, link) {
				return fmt.Errorf("%s is a link out of the plugin's folder", from.Path(rel))
			}
			return to.Symlink(link, rel)
		case info.Mode().IsRegular():
			return copyFile(dir, e.Name(), to, rel, info.Mode().Perm())
		}
		return nil
	})
}

func copyFile(from *fsutil.Root, name string, to *fsutil.Root, dst string, perm fs.FileMode) error {
	in, err := from.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := to.CreateNew(dst, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = to.Chmod(dst, perm)
	}
	return err
}

// Places are gemkit's folders for the switched plugins of one person.
type Places struct {
	// Dir holds the records and the staging folder; Home is TH, Market
	// TM.
	Dir, Home, Market string
}

// Extensions is TH's extensions folder.
func (p Places) Extensions() string { return extension.OpenStore(p.Home).Dir() }

// TwinPlugin is the twin plugin of name's folder in TM.
func (p Places) TwinPlugin(name string) string { return filepath.Join(p.Market, "plugins", name) }

// stage makes a new empty folder name in the staging folder, for a
// twin made there and then moved into place.
func (p Places) stage(name string) (string, error) {
	dir := filepath.Join(p.Dir, "staging")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return filepath.Join(dir, name+"-"+hex.EncodeToString(rnd[:])), nil
}

// place moves the folder staged to dst, replacing what is there.
func (p Places) place(staged, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	old := staged + ".old"
	if err := os.Rename(dst, old); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Rename(staged, dst); err != nil {
		return err
	}
	return fsutil.RemoveTree(old)
}

// twinPluginSkips are what of the twin extension's folder the twin
// plugin does not take: everything that runs, which it holds gemkit's
// runners for instead, and the manifests.
var twinPluginSkips = []string{".mcp.json", ".lsp.json", "hooks", "monitors", ".claude-plugin", extension.ManifestFile}

// notExtensionContent are what of a plugin's folder the twin extension
// does not take: the files gemkit reads in an extension's folder as its
// own records, outside what consent binds (an install record that would
// link the twin elsewhere, a settings file), and .git.
func notExtensionContent(rel string) bool {
	return rel == extension.InstallMetadataFile || rel == ".env" || rel == ".git"
}

// WriteExtension writes the twin extension of t, a copy of the plugin's
// folder src with t's files over it, made aside and moved into place in
// TH; it returns its folder.
func (p Places) WriteExtension(src *fsutil.Root, t *Twin) (string, error) {
	ext, err := p.stage(t.Name)
	if err != nil {
		return "", err
	}
	defer fsutil.RemoveTree(ext)
	if err := copyTree(src, ext, notExtensionContent); err != nil {
		return "", err
	}
	if err := writeFiles(ext, t.Extension); err != nil {
		return "", err
	}
	dst := filepath.Join(p.Extensions(), t.Name)
	return dst, p.place(ext, dst)
}

// WritePlugin writes the twin plugin of the plugin named plugin in TM:
// the twin extension's folder ext (the bytes consent saw) but for what
// runs, with t's plugin files; then TM's marketplace file.
func (p Places) WritePlugin(ext, plugin string, t *Twin) error {
	er, err := fsutil.OpenRoot(ext)
	if err != nil {
		return err
	}
	defer er.Close()
	plug, err := p.stage(plugin)
	if err != nil {
		return err
	}
	defer fsutil.RemoveTree(plug)
	skip := func(rel string) bool { return slices.Contains(twinPluginSkips, rel) }
	if err := copyTree(er, plug, skip); err != nil {
		return err
	}
	if err := writeFiles(plug, t.Plugin); err != nil {
		return err
	}
	if err := p.place(plug, p.TwinPlugin(plugin)); err != nil {
		return err
	}
	return p.writeMarketplace()
}

// writeFiles writes files (slash paths) into the folder dir, over what
// the copy put there.
func writeFiles(dir string, files map[string][]byte) error {
	r, err := fsutil.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	for name, data := range files {
		if err := r.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		if err := r.WriteFileAtomic(name, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Remove removes the twin plugin of name from TM (the twin extension
// stays in TH, switched off, with the person's choices for it).
func (p Places) Remove(name string) error {
	if err := fsutil.RemoveTree(p.TwinPlugin(name)); err != nil {
		return err
	}
	return p.writeMarketplace()
}

// writeMarketplace writes TM's .claude-plugin/marketplace.json listing
// every twin plugin in TM/plugins, each from its folder there.
func (p Places) writeMarketplace() error {
	ents, err := os.ReadDir(filepath.Join(p.Market, "plugins"))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var plugins []object
	for _, e := range ents {
		if e.IsDir() {
			plugins = append(plugins, object{{"name", e.Name()}, {"source", "./plugins/" + e.Name()}})
		}
	}
	if plugins == nil {
		plugins = []object{}
	}
	m := object{{"name", Marketplace}, {"owner", object{{"name", "gemkit"}}}, {"plugins", plugins}}
	if err := os.MkdirAll(filepath.Join(p.Market, ".claude-plugin"), 0o755); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(p.Market, ".claude-plugin", "marketplace.json"), m.indent(), 0o644)
}
