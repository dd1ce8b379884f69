package extmcp

import (
	"slices"
	"testing"
)

// TestRefusedWritePaths: the paths a program's error text says a write
// of was refused are the paths the error names, not the program that
// printed it: a shell's "PROGRAM: line N:" (bash), "PROGRAM: N:" (dash)
// or "PROGRAM:N:" (zsh) and any program's "PROGRAM:" (coreutils, by its
// path when run so) are its own name. A path the shell prints unquoted
// keeps its spaces, a relative one is none, and a line without the words
// of a refused write names nothing.
func TestRefusedWritePaths(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"bash -c by its path", "/usr/bin/bash: line 1: /tmp/x/hook-out.txt: Read-only file system", []string{"/tmp/x/hook-out.txt"}},
		{"bash -c", "bash: line 1: /tmp/x/hook-out.txt: Read-only file system", []string{"/tmp/x/hook-out.txt"}},
		{"a bash script", "/home/me/ext/run.sh: line 3: /tmp/x/f: Permission denied", []string{"/tmp/x/f"}},
		{"dash", "sh: 1: cannot create /tmp/x/f: Read-only file system", []string{"/tmp/x/f"}},
		{"dash by its path", "/bin/sh: 1: cannot create /tmp/x/f: Read-only file system", []string{"/tmp/x/f"}},
		{"zsh", "zsh:1: read-only file system: /tmp/x/f", []string{"/tmp/x/f"}},
		{"zsh by its path", "/usr/bin/zsh:1: permission denied: /tmp/x/f", []string{"/tmp/x/f"}},
		{"touch", "touch: cannot touch '/tmp/x/f': Read-only file system", []string{"/tmp/x/f"}},
		{"touch by its path", "/usr/bin/touch: cannot touch '/tmp/x/f': Read-only file system", []string{"/tmp/x/f"}},
		{"touch in a UTF-8 locale", "touch: cannot touch ‘/tmp/x/f’: Read-only file system", []string{"/tmp/x/f"}},
		{"tee", "/usr/bin/tee: /tmp/x/f: Read-only file system", []string{"/tmp/x/f"}},
		{"mkdir", "mkdir: cannot create directory '/a/b': Permission denied", []string{"/a/b"}},
		{"mv", "mv: cannot move '/a/b' to '/c/d': Read-only file system", []string{"/a/b", "/c/d"}},
		{"node", "Error: EROFS: read-only file system, open '/a/b'", []string{"/a/b"}},
		{"python", "OSError: [Errno 30] Read-only file system: '/a/b c'", []string{"/a/b c"}},
		{"go", "open /a/b: read-only file system", []string{"/a/b"}},
		{"perl", "Cannot open /a/b: Read-only file system at -e line 1.", []string{"/a/b"}},
		{"the path alone", "/tmp/x/f: Read-only file system", []string{"/tmp/x/f"}},
		{"bash, a path with spaces", "/usr/bin/bash: line 1: /tmp/a b/f: Read-only file system", []string{"/tmp/a b/f"}},
		{"dash, a path with spaces", "sh: 1: cannot create /tmp/a b/f: Read-only file system", []string{"/tmp/a b/f"}},
		{"a relative path", "touch: cannot touch 'x/f': Read-only file system", nil},
		{"bash, a relative path", "/usr/bin/bash: line 1: hook-out.txt: Read-only file system", nil},
		{"other words", "/usr/bin/bash: line 1: /tmp/x/f: No such file or directory", nil},
		{"two lines", "/usr/bin/bash: line 1: /tmp/x/f: Read-only file system\n/usr/bin/bash: line 2: jq: command not found\nError: EACCES: permission denied, open '/tmp/x/g'",
			[]string{"/tmp/x/f", "/tmp/x/g"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RefusedWritePaths(c.text); !slices.Equal(got, c.want) {
				t.Errorf("RefusedWritePaths(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}
