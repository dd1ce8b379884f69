package pkgrun

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// lockName is npm's lock in a tree it installed.
const lockName = "package-lock.json"

// maxLock bounds the lock read: a tree of thousands of packages writes
// a few MiB.
const maxLock = 64 << 20

// npmLock is the part of npm's package-lock.json (lockfileVersion 2 and
// 3: docs.npmjs.com, "package-lock.json") gemkit reads.
type npmLock struct {
	LockfileVersion int                    `json:"lockfileVersion"`
	Packages        map[string]lockPackage `json:"packages"`
}

type lockPackage struct {
	Name             string `json:"name"`
	Version          string `json:"version"`
	Resolved         string `json:"resolved"`
	Integrity        string `json:"integrity"`
	Link             bool   `json:"link"`
	HasInstallScript bool   `json:"hasInstallScript"`
}

// readLock reads the lock of the tree root, which npm wrote in the
// sandbox: through the tree's Root, bounded.
func readLock(root *fsutil.Root) (npmLock, []byte, error) {
	data, err := root.ReadFile(lockName, maxLock)
	if err != nil {
		return npmLock{}, nil, fmt.Errorf("the install's lock: %w", err)
	}
	var l npmLock
	if err := json.Unmarshal(data, &l); err != nil {
		return npmLock{}, nil, fmt.Errorf("the install's lock is not JSON: %w", err)
	}
	if l.LockfileVersion < 2 || l.Packages == nil {
		return npmLock{}, nil, fmt.Errorf("the install's lock is of version %d, without the packages of the tree (npm 7 or newer writes them)", l.LockfileVersion)
	}
	return l, data, nil
}

// pkgName is the name of the package at a lock's path
// (node_modules/a/node_modules/@s/b is @s/b), or its own name field.
func pkgName(path string, p lockPackage) string {
	if p.Name != "" {
		return p.Name
	}
	i := strings.LastIndex(path, "node_modules/")
	if i < 0 {
		return path
	}
	return path[i+len("node_modules/"):]
}

// installed are the packages of the tree, "name@version", sorted, one
// per version however many copies npm made.
func (l npmLock) installed() []string {
	seen := map[string]bool{}
	for path, p := range l.Packages {
		if path == "" || p.Link || !strings.Contains(path, "node_modules/") {
			continue
		}
		seen[pkgName(path, p)+"@"+p.Version] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withScripts are the packages whose lock entry says they have install
// scripts (preinstall, install, postinstall, or a binding.gyp npm would
// build), "name@version", sorted.
func (l npmLock) withScripts() []string {
	var out []string
	for path, p := range l.Packages {
		if path != "" && p.HasInstallScript {
			out = append(out, pkgName(path, p)+"@"+p.Version)
		}
	}
	sort.Strings(out)
	return out
}

// Changes is what changed between two trees: the packages added and
// removed, "name@version", and those whose version changed, "name
// old → new".
type Changes struct {
	Added, Removed, Changed []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Removed)+len(c.Changed) == 0 }

// Words say c in a line, naming at most max packages of each kind.
func (c Changes) Words(max int) string {
	if c.Empty() {
		return "no package changed"
	}
	var parts []string
	add := func(n int, what string, names []string) {
		if n == 0 {
			return
		}
		shown := names
		if len(shown) > max {
			shown = shown[:max]
		}
		s := fmt.Sprintf("%d %s (%s", n, what, strings.Join(shown, ", "))
		if len(names) > len(shown) {
			s += fmt.Sprintf(", and %d more", len(names)-len(shown))
		}
		parts = append(parts, s+")")
	}
	add(len(c.Changed), "changed", c.Changed)
	add(len(c.Added), "added", c.Added)
	add(len(c.Removed), "removed", c.Removed)
	return strings.Join(parts, "; ")
}

// Diff says what changed from the tree in dir old to the one in new,
// both trees gemkit installed, by their locks: a package of the same
// version whose bytes differ (its integrity) changed too.
func Diff(old, new string) (Changes, error) {
	a, err := lockIn(old)
	if err != nil {
		return Changes{}, err
	}
	b, err := lockIn(new)
	if err != nil {
		return Changes{}, err
	}
	c := diffPackages(a.installed(), b.installed())
	ia, ib := a.integrities(), b.integrities()
	for _, nv := range a.installed() {
		was, now := ia[nv], ib[nv]
		if _, both := ib[nv]; both && was != now {
			at := strings.LastIndex(nv, "@")
			c.Changed = append(c.Changed, fmt.Sprintf("%s %s: other bytes (integrity %s → %s)", nv[:at], nv[at+1:], short(was), short(now)))
		}
	}
	sort.Strings(c.Changed)
	return c, nil
}

// integrities are the integrity of each package of the tree,
// "name@version" to the integrities of its copies (sorted, joined by
// ", ": a copy of other bytes than another of the same version shows).
func (l npmLock) integrities() map[string]string {
	sets := map[string]map[string]bool{}
	for path, p := range l.Packages {
		if path == "" || p.Link || !strings.Contains(path, "node_modules/") {
			continue
		}
		nv := pkgName(path, p) + "@" + p.Version
		if sets[nv] == nil {
			sets[nv] = map[string]bool{}
		}
		sets[nv][p.Integrity] = true
	}
	out := make(map[string]string, len(sets))
	for nv, set := range sets {
		list := make([]string, 0, len(set))
		for i := range set {
			list = append(list, i)
		}
		sort.Strings(list)
		out[nv] = strings.Join(list, ", ")
	}
	return out
}

// short is an integrity in words: its algorithm and first characters.
func short(integrity string) string {
	if len(integrity) > 19 {
		return integrity[:19] + "…"
	}
	return integrity
}

// diffPackages compares two sorted lists of name@version.
func diffPackages(a, b []string) Changes {
	versions := func(list []string) map[string][]string {
		m := map[string][]string{}
		for _, nv := range list {
			at := strings.LastIndex(nv, "@")
			m[nv[:at]] = append(m[nv[:at]], nv[at+1:])
		}
		return m
	}
	va, vb := versions(a), versions(b)
	var c Changes
	names := map[string]bool{}
	for n := range va {
		names[n] = true
	}
	for n := range vb {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		was, now := va[n], vb[n]
		switch {
		case len(was) == 0:
			for _, v := range now {
				c.Added = append(c.Added, n+" "+v)
			}
		case len(now) == 0:
			for _, v := range was {
				c.Removed = append(c.Removed, n+" "+v)
			}
		case strings.Join(was, ",") != strings.Join(now, ","):
			c.Changed = append(c.Changed, n+" "+strings.Join(was, ", ")+" → "+strings.Join(now, ", "))
		}
	}
	return c
}
