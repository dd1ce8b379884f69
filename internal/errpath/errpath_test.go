package errpath

import (
	"slices"
	"testing"
)

// TestPaths: the absolute paths an error's text names, whatever the
// error (the refusal words are the callers' filter), without the name
// of the program that printed it at a line's start, a relative path, a
// URL or a module's "node:internal/..." name. The shapes of refusals
// by program are extmcp's TestRefusedWritePaths.
func TestPaths(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"bash's own name", "/usr/bin/bash: line 1: /tmp/x/f: No such file or directory", []string{"/tmp/x/f"}},
		{"a program's own name", "/usr/bin/cat: /etc/x: Is a directory", []string{"/etc/x"}},
		{"the path alone", "/tmp/x/f: Read-only file system", []string{"/tmp/x/f"}},
		{"quoted, twice", `cp: cannot stat '/a b': No such file; "/a b" again`, []string{"/a b"}},
		{"cleaned", "open /a//b/./c/: failed", []string{"/a/b/c"}},
		{"no URL, no module", "fetch https://example.com/x failed at node:internal/fs/utils:347", nil},
		{"a relative path", "open x/y: failed", nil},
		{"nothing", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Paths(c.text); !slices.Equal(got, c.want) {
				t.Errorf("Paths(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}
