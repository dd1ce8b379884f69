package disclosure

import (
	"fmt"
	"github.com/gemkit/gemkit/internal/agentplugin"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Source is where a Set comes from. Stamp is cheap (file metadata only):
// when it is unchanged since the last Load, Load would give the same Set,
// which is how a long-running server notices installs, removals and
// enablement changes without reloading on every request.
type Source interface {
	// Load reads the Set afresh.
	Load() (*Set, error)
	// Stamp fingerprints every file Load reads, given the last Set it
	// loaded (nil before the first).
	Stamp(last *Set) string
	// Describe names the source for messages.
	Describe() string
}

// StoreSource is the extensions installed in st and enabled for its
// workspace.
func StoreSource(st *extension.Store) Source { return storeSource{st: st} }

// DirSource is the one extension in dir, for workspace.
func DirSource(dir, workspace string) Source { return dirSource{dir: dir, workspace: workspace} }

// NameLimited is src (a StoreSource or a DirSource) with exposed names
// of at most limit characters instead of DefaultNameLimit (see
// CheckNameLimit for the range).
func NameLimited(src Source, limit int) (Source, error) {
	if err := CheckNameLimit(limit); err != nil {
		return nil, err
	}
	switch s := src.(type) {
	case storeSource:
		s.limit = limit
		return s, nil
	case dirSource:
		s.limit = limit
		return s, nil
	}
	return nil, fmt.Errorf("disclosure: %T has no name limit", src)
}

type storeSource struct {
	st    *extension.Store
	limit int
	// only, when set, is the one extension served (Only).
	only string
}

// Only is st's source of the extension name alone (gemkit mcp --only,
// which a switched Claude Code plugin's twin runs for its servers), or
// StoreSource when name is "".
func Only(st *extension.Store, name string) Source { return storeSource{st: st, only: name} }

func (s storeSource) Load() (*Set, error) { return load(s.st, s.limit, s.only) }

func (s storeSource) Describe() string {
	return fmt.Sprintf("the extensions in %s enabled for %s", s.st.Dir(), s.st.Workspace())
}

// Stamp covers the extensions folder's entries (each entry's manifest,
// install metadata, settings file and skill files), the enablement file,
// for extensions whose folder is elsewhere (linked ones), their
// manifest, settings file and skill files, and the consent records and
// MCP server choices (Store.ChoiceFiles), which decide which extensions'
// own servers gemkit mcp serves.
func (s storeSource) Stamp(last *Set) string {
	var b strings.Builder
	for _, f := range s.st.ChoiceFiles() {
		stamp(&b, f)
	}
	dir := s.st.Dir()
	// The extensions folder, gemkit's Agent Plugins folder and their
	// entries are the store's own listing.
	for _, d := range []string{dir, s.st.PluginsDir()} {
		stamp(&b, d)
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			stamp(&b, p)
			stampFiles(&b, p, extension.ManifestFile, extension.InstallMetadataFile, ".env", agentplugin.ManifestFile, agentplugin.MCPFile)
		}
	}
	if last != nil {
		var outside []string
		for _, e := range last.Extensions {
			if d := filepath.Dir(e.Ext.Dir); d != dir && d != s.st.PluginsDir() {
				outside = append(outside, e.Ext.Dir)
			}
		}
		sort.Strings(outside)
		for _, d := range outside {
			stampFiles(&b, d, extension.ManifestFile, ".env", agentplugin.ManifestFile, agentplugin.MCPFile)
		}
	}
	return b.String()
}

type dirSource struct {
	dir, workspace string
	limit          int
}

func (s dirSource) Load() (*Set, error) { return loadDir(s.dir, s.workspace, s.limit) }

func (s dirSource) Describe() string { return "the extension in " + s.dir }

func (s dirSource) Stamp(*Set) string {
	var b strings.Builder
	stampFiles(&b, s.dir, extension.ManifestFile, ".env", agentplugin.ManifestFile, agentplugin.MCPFile)
	return b.String()
}

// stampFiles appends the identity of the files names of the extension
// folder dir and of the files it has its skills in (skills/ itself,
// skills/SKILL.md and each skills/*/SKILL.md), looked at through a Root
// of dir: a link the extension ships is followed only inside it.
func stampFiles(b *strings.Builder, dir string, names ...string) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		fmt.Fprintf(b, "%s -\n", dir)
		return
	}
	defer root.Close()
	for _, n := range names {
		stampIn(b, root, n)
	}
	skills := "skills"
	stampIn(b, root, skills)
	entries, err := root.ReadDir(skills)
	if err != nil {
		return
	}
	stampIn(b, root, filepath.Join(skills, "SKILL.md"))
	for _, e := range entries {
		if e.Name() != "SKILL.md" {
			stampIn(b, root, filepath.Join(skills, e.Name(), "SKILL.md"))
		}
	}
}

// stamp appends the identity of p, a path gemkit trusts (the extensions
// folder, an entry of it).
func stamp(b *strings.Builder, p string) {
	fi, err := os.Stat(p)
	writeStamp(b, p, fi, err)
}

// stampIn appends the identity of name in root.
func stampIn(b *strings.Builder, root *fsutil.Root, name string) {
	fi, err := root.Stat(name)
	writeStamp(b, root.Path(name), fi, err)
}

// writeStamp appends p's identity: size, modification time, mode and (on
// Unix) inode, or "-" when it cannot be looked at.
func writeStamp(b *strings.Builder, p string, fi fs.FileInfo, err error) {
	if err != nil {
		fmt.Fprintf(b, "%s -\n", p)
		return
	}
	fmt.Fprintf(b, "%s %d %d %v %s\n", p, fi.Size(), fi.ModTime().UnixNano(), fi.Mode(), fileID(fi))
}
