package wswatch

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// root is one workspace folder and the ignore rules that apply in it.
type root struct {
	dir string
	// base is the top of the git work tree holding dir (where patterns are
	// relative to), or dir when it is in none.
	base string

	mu sync.Mutex
	// patterns holds each folder's .gitignore patterns, by the folder's
	// path relative to base ("." for base; there also .git/info/exclude
	// under the key exclude).
	patterns map[string][]gitignore.Pattern
	matcher  gitignore.Matcher
}

const exclude = ".git/info/exclude"

func newRoot(dir string) *root {
	r := &root{dir: dir, base: gitTop(dir), patterns: map[string][]gitignore.Pattern{}}
	if ps := readPatterns(filepath.Join(r.base, ".git", "info", "exclude"), nil); len(ps) > 0 {
		r.patterns[exclude] = ps
	}
	// The .gitignore files from the work tree's top down to dir apply
	// inside dir too; dir's own and those below are read as they are
	// walked.
	for d := r.base; d != dir; {
		r.setLocked(d)
		rel, _ := filepath.Rel(d, dir)
		d = filepath.Join(d, strings.Split(rel, string(filepath.Separator))[0])
	}
	r.rebuildLocked()
	if r.base != dir && r.ignored(dir, true) {
		// The workspace folder is one the repository ignores: inside it,
		// only its own rules apply.
		r.base, r.patterns = dir, map[string][]gitignore.Pattern{}
		r.rebuildLocked()
	}
	return r
}

// gitTop returns the nearest folder at or above dir that holds .git (a
// folder, or a file in a linked work tree), else dir.
func gitTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// domain is dir relative to base, split into names (nil for base).
func (r *root) domain(dir string) []string {
	rel, err := filepath.Rel(r.base, dir)
	if err != nil || rel == "." {
		return nil
	}
	return strings.Split(filepath.ToSlash(rel), "/")
}

func (r *root) key(dir string) string {
	rel, err := filepath.Rel(r.base, dir)
	if err != nil {
		return dir
	}
	return filepath.ToSlash(rel)
}

// setLocked reads dir's .gitignore into the patterns, without rebuilding
// the matcher.
func (r *root) setLocked(dir string) bool {
	ps := readPatterns(filepath.Join(dir, ".gitignore"), r.domain(dir))
	key := r.key(dir)
	_, had := r.patterns[key]
	if len(ps) == 0 {
		delete(r.patterns, key)
		return had
	}
	r.patterns[key] = ps
	return true
}

// loadIgnore (re)reads dir's .gitignore.
func (r *root) loadIgnore(dir string, log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.setLocked(dir) {
		log.Debug("workspace watcher: ignore rules read", "dir", dir)
		r.rebuildLocked()
	}
}

// dropIgnore forgets the patterns of dir and the folders below it.
func (r *root) dropIgnore(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prefix := r.key(dir)
	changed := false
	for k := range r.patterns {
		if k != exclude && (k == prefix || strings.HasPrefix(k, prefix+"/")) && prefix != "." {
			delete(r.patterns, k)
			changed = true
		}
	}
	if changed {
		r.rebuildLocked()
	}
}

// rebuildLocked orders the patterns by increasing priority, as git does:
// .git/info/exclude, then each .gitignore from the top down (a deeper
// file overrides a shallower one).
func (r *root) rebuildLocked() {
	keys := make([]string, 0, len(r.patterns))
	for k := range r.patterns {
		keys = append(keys, k)
	}
	depth := func(k string) int {
		switch k {
		case exclude:
			return -1
		case ".":
			return 0
		}
		return strings.Count(k, "/") + 1
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := depth(a) - depth(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var all []gitignore.Pattern
	for _, k := range keys {
		all = append(all, r.patterns[k]...)
	}
	r.matcher = gitignore.NewMatcher(all)
}

// ignored reports whether git would ignore path, or a folder holding it
// below the work tree's top.
func (r *root) ignored(path string, isDir bool) bool {
	parts := r.domain(path)
	if len(parts) == 0 || parts[0] == ".." {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 1; i < len(parts); i++ {
		if r.matcher.Match(parts[:i], true) {
			return true
		}
	}
	return r.matcher.Match(parts, isDir)
}

// readPatterns parses one ignore file; a missing or unreadable file has
// no patterns.
func readPatterns(path string, domain []string) []gitignore.Pattern {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
