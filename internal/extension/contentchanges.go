package extension

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// What changed in an extension's folder since the person agreed to it,
// in words they can act on (ContentNotice): the files by name, a few at
// most, and the dependency folders as a whole. Apart from reading the
// content, whose digest only says that something changed.

// How a file differs from the one the person agreed to.
const (
	FileAdded       = "added"
	FileRemoved     = "removed"
	FileChanged     = "changed"
	FileModeChanged = "mode changed"
)

// FileChange is a file of an extension folder that differs from the one
// the person agreed to.
type FileChange struct {
	Path string
	// How is FileAdded, FileRemoved, FileChanged (its content or target,
	// whatever its mode) or FileModeChanged (its mode only).
	How string
}

// ChangedFiles lists the files of now that differ from those of agreed,
// in path order. It needs the per-file lists of both: nil when agreed has
// none.
func ChangedFiles(agreed, now Content) []FileChange {
	agreed.Files, now.Files = agreed.FileList(), now.FileList()
	var out []FileChange
	for rel, was := range agreed.Files {
		is, ok := now.Files[rel]
		switch {
		case !ok:
			out = append(out, FileChange{Path: rel, How: FileRemoved})
		case is != was:
			out = append(out, FileChange{Path: rel, How: stateChange(was, is)})
		}
	}
	if agreed.Files != nil {
		for rel := range now.Files {
			if _, ok := agreed.Files[rel]; !ok {
				out = append(out, FileChange{Path: rel, How: FileAdded})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// stateChange tells a change of mode alone from one of content, between
// two different entries of Content.Files.
func stateChange(was, is string) string {
	_, wasSum, _ := strings.Cut(was, " ")
	_, isSum, _ := strings.Cut(is, " ")
	if wasSum == isSum {
		return FileModeChanged
	}
	return FileChanged
}

// maxNamedFiles bounds the files ContentNotice names: past it the person
// is better served by looking at the folder than by reading a list.
const maxNamedFiles = 10

// ContentNotice says why consent given to the files agreed does not hold
// for the files now in dir, as a statement of its own to be shown before
// the permissions (it is not one of them): which files were added,
// removed or changed since, or, for a record older than the per-file
// list or than binding consent to files, that gemkit cannot say. It is
// "" when the files are the ones agreed to. Paths are made Printable:
// they come from the extension.
func ContentNotice(agreed, now Content, dir string) string {
	if agreed.Digest != now.Digest {
		agreed.Files, agreed.loadFiles = agreed.FileList(), nil
		now.Files, now.loadFiles = now.FileList(), nil
	}
	switch {
	case agreed.Digest == now.Digest:
		return ""
	case agreed.Digest == "":
		return "gemkit now binds your consent to the extension's files as well as to its permissions; agree once more to run these files."
	case agreed.Files == nil:
		return "Since you agreed, the extension's files changed; gemkit cannot name them, as your consent was recorded before it kept a list of files. Look at " +
			Printable(dir) + " before agreeing again."
	}
	changes := ChangedFiles(agreed, now)
	if len(changes) == 0 {
		return "Since you agreed, the extension's files changed. Look at " + Printable(dir) + " before agreeing again."
	}
	what, them := "these files of the extension changed", "them"
	if len(changes) == 1 {
		what, them = "this file of the extension changed", "it"
	}
	return "Since you agreed, " + what + ": " + namedChanges(changes) + ". Look at " + them + " in " + Printable(dir) + " before agreeing again."
}

// namedChanges lists changes as "tools/a.py (changed), b.sh (added)",
// at most maxNamedFiles of them, then "and N more": the extension's own
// files first, then those of the dependencies it ships (a node_modules,
// a vendor folder, a virtualenv), so that a changed server.js is never
// hidden behind the hundreds of files an npm install changes.
func namedChanges(changes []FileChange) string {
	var own, deps []FileChange
	for _, c := range changes {
		if dependencyPath(c.Path) {
			deps = append(deps, c)
		} else {
			own = append(own, c)
		}
	}
	nOwn := min(len(own), maxNamedFiles)
	nDeps := min(len(deps), maxNamedFiles-nOwn)
	shown := append(slices.Clip(own[:nOwn]), deps[:nDeps]...)
	names := make([]string, len(shown))
	for i, c := range shown {
		names[i] = Printable(c.Path) + " (" + c.How + ")"
	}
	s := strings.Join(names, ", ")
	moreOwn, moreDeps := len(own)-nOwn, len(deps)-nDeps
	switch {
	case moreOwn > 0 && moreDeps > 0:
		s += fmt.Sprintf(" and %d more of its own, and %d in its dependencies (%s)", moreOwn, moreDeps, dependencyFolders(deps))
	case moreOwn > 0:
		s += fmt.Sprintf(" and %d more", moreOwn)
	case moreDeps > 0 && len(own) > 0:
		s += fmt.Sprintf(" and %d in its dependencies (%s)", moreDeps, dependencyFolders(deps))
	case moreDeps > 0:
		s += fmt.Sprintf(" and %d more in its dependencies (%s)", moreDeps, dependencyFolders(deps))
	}
	return s
}

// dependencyFolders are the names of the dependency folders of changes
// (node_modules, vendor, ...), each once.
func dependencyFolders(changes []FileChange) string {
	var names []string
	for _, c := range changes {
		for _, part := range strings.Split(c.Path, "/") {
			if dependencyFolder[part] && !slices.Contains(names, part) {
				names = append(names, part)
			}
		}
	}
	return strings.Join(names, ", ")
}

// dependencyFolder are the folders in which package managers put what
// an extension depends on, rather than its author's own code.
var dependencyFolder = map[string]bool{"node_modules": true, "bower_components": true, "vendor": true,
	".venv": true, "venv": true, "site-packages": true, "__pycache__": true}

// dependencyPath says whether the file rel lies in a dependency folder.
func dependencyPath(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if dependencyFolder[part] {
			return true
		}
	}
	return false
}
