// Package fsutil holds the file-system helpers several gemkit packages
// share, so that each rule is written once: whether a path lies inside a
// folder, a path's real name, and how a file is replaced atomically.
package fsutil

import (
	"path/filepath"
	"strings"
)

// Rel returns p relative to dir when p is dir itself (".") or lies below
// it, comparing lexically after cleaning both. ok is false when p is
// outside dir or the two cannot be related (one relative, one absolute).
// A name that merely starts with two dots, such as "..gemini", is inside.
func Rel(dir, p string) (rel string, ok bool) {
	r, err := filepath.Rel(dir, p)
	if err != nil || filepath.IsAbs(r) {
		return "", false
	}
	if r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return r, true
}

// Within reports whether p is dir or lies below it (see [Rel]). Two
// absolute paths are compared by their cleaned names without building the
// relative path: the sandbox asks this of every pair of its mounts and
// rules, so it must not allocate.
func Within(dir, p string) bool {
	if !filepath.IsAbs(dir) || !filepath.IsAbs(p) {
		_, ok := Rel(dir, p)
		return ok
	}
	dir, p = filepath.Clean(dir), filepath.Clean(p)
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		// Only a root ends with a separator once cleaned.
		return strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == filepath.Separator)
}

// StrictlyWithin reports whether p lies below dir and is not dir itself.
func StrictlyWithin(dir, p string) bool {
	r, ok := Rel(dir, p)
	return ok && r != "."
}

// RealPath is p with its symbolic links resolved; a path that does not
// resolve (it does not exist, or a link on the way leads nowhere) stays
// as it is, cleaned. It is what the sandbox's profiles and the
// permission checks compare folders by, so that a folder reached through
// a link is the folder itself.
func RealPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
