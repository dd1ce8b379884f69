package disclosure

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
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
}

func (s storeSource) Load() (*Set, error) { return load(s.st, s.limit) }

func (s storeSource) Describe() string {
	return fmt.Sprintf("the extensions in %s enabled for %s", s.st.Dir(), s.st.Workspace())
}

// Stamp covers the extensions folder's entries (each entry's manifest,
// install metadata, settings file and skill files), the enablement file,
// and, for extensions whose folder is elsewhere (linked ones), their
// manifest, settings file and skill files.
func (s storeSource) Stamp(last *Set) string {
	var b strings.Builder
	dir := s.st.Dir()
	stamp(&b, dir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		stamp(&b, p)
		stamp(&b, filepath.Join(p, extension.ManifestFile))
		stamp(&b, filepath.Join(p, extension.InstallMetadataFile))
		stamp(&b, filepath.Join(p, ".env"))
		stampSkills(&b, p)
	}
	if last != nil {
		var outside []string
		for _, e := range last.Extensions {
			if filepath.Dir(e.Ext.Dir) != dir {
				outside = append(outside, e.Ext.Dir)
			}
		}
		sort.Strings(outside)
		for _, d := range outside {
			stamp(&b, filepath.Join(d, extension.ManifestFile))
			stamp(&b, filepath.Join(d, ".env"))
			stampSkills(&b, d)
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
	stamp(&b, filepath.Join(s.dir, extension.ManifestFile))
	stamp(&b, filepath.Join(s.dir, ".env"))
	stampSkills(&b, s.dir)
	return b.String()
}

// stampSkills appends the identity of the files an extension in dir
// has its skills in: skills/ itself, skills/SKILL.md and each
// skills/*/SKILL.md.
func stampSkills(b *strings.Builder, dir string) {
	root := filepath.Join(dir, "skills")
	stamp(b, root)
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	stamp(b, filepath.Join(root, "SKILL.md"))
	for _, e := range entries {
		if e.Name() != "SKILL.md" {
			stamp(b, filepath.Join(root, e.Name(), "SKILL.md"))
		}
	}
}

// stamp appends p's identity: size, modification time, mode and (on
// Unix) inode, or "-" when it does not exist.
func stamp(b *strings.Builder, p string) {
	fi, err := os.Stat(p)
	if err != nil {
		fmt.Fprintf(b, "%s -\n", p)
		return
	}
	fmt.Fprintf(b, "%s %d %d %v %s\n", p, fi.Size(), fi.ModTime().UnixNano(), fi.Mode(), fileID(fi))
}
