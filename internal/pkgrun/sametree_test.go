package pkgrun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestSameTree(t *testing.T) {
	base := func() npmLock {
		return npmLock{LockfileVersion: 3, Packages: map[string]lockPackage{
			"":                                  {Name: "gemkit-pinned"},
			"node_modules/hello-mcp":            {Version: "1.1.0", Resolved: "http://r/hello-mcp/-/hello-mcp-1.1.0.tgz", Integrity: "sha512-h"},
			"node_modules/dep-a":                {Version: "1.1.0", Resolved: "http://r/dep-a/-/dep-a-1.1.0.tgz", Integrity: "sha512-a"},
			"node_modules/x/node_modules/dep-a": {Version: "1.0.0", Integrity: "sha512-a0", HasInstallScript: true},
		}}
	}
	// set edits the package at path of a lock.
	set := func(path string, edit func(*lockPackage)) func(npmLock) {
		return func(l npmLock) {
			p := l.Packages[path]
			edit(&p)
			l.Packages[path] = p
		}
	}
	tests := []struct {
		name string
		edit func(l npmLock)
		same bool
	}{
		{"the same", func(npmLock) {}, true},
		{"where it is fetched from left out (a lock npm wrote without installing)", set("node_modules/dep-a", func(p *lockPackage) { p.Resolved = "" }), true},
		{"the root's own entry", func(l npmLock) { l.Packages[""] = lockPackage{Name: "other", Version: "9"} }, true},
		{"a version", set("node_modules/dep-a", func(p *lockPackage) { p.Version = "1.2.0" }), false},
		{"the bytes (integrity)", set("node_modules/hello-mcp", func(p *lockPackage) { p.Integrity = "sha512-other" }), false},
		{"install scripts", set("node_modules/x/node_modules/dep-a", func(p *lockPackage) { p.HasInstallScript = false }), false},
		{"a link for a package", set("node_modules/dep-a", func(p *lockPackage) { p.Link = true }), false},
		{"an alias's name", set("node_modules/dep-a", func(p *lockPackage) { p.Name = "evil" }), false},
		{"a package more", func(l npmLock) {
			l.Packages["node_modules/dep-b"] = lockPackage{Version: "1.0.0", Integrity: "sha512-b"}
		}, false},
		{"a package less", func(l npmLock) { delete(l.Packages, "node_modules/dep-a") }, false},
		{"a package moved", func(l npmLock) {
			l.Packages["node_modules/y/node_modules/dep-a"] = l.Packages["node_modules/x/node_modules/dep-a"]
			delete(l.Packages, "node_modules/x/node_modules/dep-a")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base()
			tt.edit(b)
			if got := sameTree(base(), b); got != tt.same {
				t.Errorf("sameTree = %v, want %v", got, tt.same)
			}
			if got := sameTree(b, base()); got != tt.same {
				t.Errorf("sameTree, the other way = %v, want %v", got, tt.same)
			}
		})
	}
}

// TestSameLockLinkOut: a pinned tree's lock that npm (or anything that
// wrote the tree) made a link out of it is not followed: Same fails
// rather than read a file outside, here one that would match.
func TestSameLockLinkOut(t *testing.T) {
	lock := `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/a": {"version": "1.0.0", "integrity": "sha512-a"}}}`
	outside, tree := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, lockName), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, lockName), filepath.Join(tree, lockName)); err != nil {
		t.Fatal(err)
	}
	var l npmLock
	if err := json.Unmarshal([]byte(lock), &l); err != nil {
		t.Fatal(err)
	}
	if same, err := (Resolution{lock: l}).Same(tree); err == nil || same {
		t.Errorf("Same through a lock linked out of the tree: %v, %v", same, err)
	}
	if same, err := (Resolution{lock: l}).Same(outside); err != nil || !same {
		t.Errorf("Same of the lock itself: %v, %v", same, err)
	}
}

// TestDiffOtherBytes: a package of the same version whose bytes changed
// (its integrity) is told as changed, where Diff said "no package
// changed" of a tree a poisoned cache had given other bytes.
func TestDiffOtherBytes(t *testing.T) {
	lock := func(integrity string) string {
		return `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/victim-mcp": {"version": "1.0.0", "integrity": "sha512-m"},
 "node_modules/victim-lib": {"version": "1.0.0", "integrity": "` + integrity + `"}}}`
	}
	old, new := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(old, lockName), []byte(lock("sha512-genuineAAAAAAAAAAAAAAAA")), 0o644)
	os.WriteFile(filepath.Join(new, lockName), []byte(lock("sha512-poisonedBBBBBBBBBBBBBBBB")), 0o644)
	c, err := Diff(old, new)
	if err != nil {
		t.Fatal(err)
	}
	want := "1 changed (victim-lib 1.0.0: other bytes (integrity sha512-genuineAAAAA… → sha512-poisonedBBBB…))"
	if got := c.Words(6); got != want {
		t.Errorf("Diff says %q, want %q", got, want)
	}
	if c, err := Diff(old, old); err != nil || !c.Empty() {
		t.Errorf("Diff of a tree with itself: %+v %v", c, err)
	}
}
