package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Bounds of ContentDigest: an extension folder past them is not one whose
// code a person could have looked at, and hashing it on every run would
// cost too much.
const (
	maxContentFiles = 20000
	maxContentBytes = 512 << 20
)

// Content is an extension folder's files as consent binds to them.
type Content struct {
	// Digest is the folder's ContentDigest, the one value consent is
	// checked against.
	Digest string
	// Files maps every file's slash path, relative to the folder, to its
	// mode and the SHA-256 of its content (of its target, for a symlink):
	// "-rwxr-xr-x 9f86d0…". It adds nothing to what Digest binds; it is
	// kept so that a digest that no longer matches can be explained by
	// naming the files that changed. nil for a record older than it.
	Files map[string]string
}

// ContentDigest hashes the files of an extension folder: every regular
// file's path, mode and content, and every symlink's target, in path
// order. Consent binds to it as well as to the permissions, so that code
// changed since the person agreed (a linked source edited, a tool script
// rewritten) is shown and asked about again. The settings file (.env),
// whose values the person sets, gemkit's install metadata and .git are
// left out.
func ContentDigest(dir string) (string, error) {
	c, err := ReadContent(dir)
	return c.Digest, err
}

// ReadContent reads the folder dir as consent binds to it: its
// ContentDigest and, from the same walk, the per-file list that names
// what changed when the digest no longer matches.
func ReadContent(dir string) (Content, error) {
	files, err := contentFiles(dir)
	if err != nil {
		return Content{}, fmt.Errorf("hashing the extension's files in %s: %w", dir, err)
	}
	h := sha256.New()
	c := Content{Files: make(map[string]string, len(files))}
	for _, f := range files {
		fmt.Fprintf(h, "%q %o\n", f.rel, f.mode)
		line, sum, err := f.hash()
		if err != nil {
			return Content{}, fmt.Errorf("hashing the extension's files: %w", err)
		}
		h.Write(line)
		c.Files[f.rel] = fileState(f.mode, sum)
	}
	c.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return c, nil
}

// contentFile is one file ContentDigest covers.
type contentFile struct {
	rel  string // slash path relative to the folder
	mode fs.FileMode
	path string
}

// contentFiles lists the files of dir that ContentDigest covers, in path
// order, within its bounds.
func contentFiles(dir string) ([]contentFile, error) {
	var files []contentFile
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == ".env" || rel == InstallMetadataFile {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			total += info.Size()
		}
		files = append(files, contentFile{rel: filepath.ToSlash(rel), mode: info.Mode(), path: path})
		if len(files) > maxContentFiles || total > maxContentBytes {
			return fmt.Errorf("more than %d files or %d MiB", maxContentFiles, maxContentBytes>>20)
		}
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, err
}

// hash returns what f adds to ContentDigest after its path and mode (the
// SHA-256 of a regular file's content, a symlink's target; nothing for
// other kinds of file) and the SHA-256 of that content or target, nil
// for other kinds.
func (f contentFile) hash() (line, sum []byte, err error) {
	switch {
	case f.mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(f.path)
		if err != nil {
			return nil, nil, err
		}
		s := sha256.Sum256([]byte(target))
		return fmt.Appendf(nil, "-> %q\n", target), s[:], nil
	case f.mode.IsRegular():
		file, err := os.Open(f.path)
		if err != nil {
			return nil, nil, err
		}
		defer file.Close()
		h := sha256.New()
		if _, err := io.Copy(h, file); err != nil {
			return nil, nil, err
		}
		s := h.Sum(nil)
		return fmt.Appendf(nil, "%x\n", s), s, nil
	}
	return nil, nil, nil
}

// fileState is the entry of Content.Files for a file of mode and hash sum.
func fileState(mode fs.FileMode, sum []byte) string {
	if sum == nil {
		return mode.String()
	}
	return mode.String() + " " + hex.EncodeToString(sum)
}

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

// namedChanges lists changes as "tools/a.py (changed), b.sh (added)", at
// most maxNamedFiles of them, then "and N more".
func namedChanges(changes []FileChange) string {
	n := min(len(changes), maxNamedFiles)
	names := make([]string, n)
	for i, c := range changes[:n] {
		names[i] = Printable(c.Path) + " (" + c.How + ")"
	}
	s := strings.Join(names, ", ")
	if more := len(changes) - n; more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
