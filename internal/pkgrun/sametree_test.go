package pkgrun

import "testing"

func TestSameTree(t *testing.T) {
	base := func() npmLock {
		return npmLock{LockfileVersion: 3, Packages: map[string]lockPackage{
			"":                                  {Name: "gemkit-pinned"},
			"node_modules/hello-mcp":            {Version: "1.1.0", Resolved: "http://r/hello-mcp/-/hello-mcp-1.1.0.tgz", Integrity: "sha512-h"},
			"node_modules/dep-a":                {Version: "1.1.0", Resolved: "http://r/dep-a/-/dep-a-1.1.0.tgz", Integrity: "sha512-a"},
			"node_modules/x/node_modules/dep-a": {Version: "1.0.0", Integrity: "sha512-a0", HasInstallScript: true},
		}}
	}
	tests := []struct {
		name string
		edit func(l npmLock)
		same bool
	}{
		{"the same", func(npmLock) {}, true},
		{"where it is fetched from left out (a lock npm wrote without installing)", func(l npmLock) {
			p := l.Packages["node_modules/dep-a"]
			p.Resolved = ""
			l.Packages["node_modules/dep-a"] = p
		}, true},
		{"the root's own entry", func(l npmLock) { l.Packages[""] = lockPackage{Name: "other", Version: "9"} }, true},
		{"a version", func(l npmLock) {
			p := l.Packages["node_modules/dep-a"]
			p.Version = "1.2.0"
			l.Packages["node_modules/dep-a"] = p
		}, false},
		{"the bytes (integrity)", func(l npmLock) {
			p := l.Packages["node_modules/hello-mcp"]
			p.Integrity = "sha512-other"
			l.Packages["node_modules/hello-mcp"] = p
		}, false},
		{"install scripts", func(l npmLock) {
			p := l.Packages["node_modules/x/node_modules/dep-a"]
			p.HasInstallScript = false
			l.Packages["node_modules/x/node_modules/dep-a"] = p
		}, false},
		{"a link for a package", func(l npmLock) {
			p := l.Packages["node_modules/dep-a"]
			p.Link = true
			l.Packages["node_modules/dep-a"] = p
		}, false},
		{"an alias's name", func(l npmLock) {
			p := l.Packages["node_modules/dep-a"]
			p.Name = "evil"
			l.Packages["node_modules/dep-a"] = p
		}, false},
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
