package progsearch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLook: a server's command is a name found on the PATH a
// server may start from, or a program's full path (a config entry's
// "command": ["/opt/go/bin/gopls"], as docs/code-intel.md shows); a
// relative path, a folder or a file that cannot be run is not found.
func TestLook(t *testing.T) {
	bin, opt := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(bin, "gopls"), filepath.Join(opt, "gopls")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(opt, "notes"), []byte("x"), 0o644)
	ws := t.TempDir()
	planted := filepath.Join(ws, "node_modules", ".bin")
	os.MkdirAll(planted, 0o755)
	os.WriteFile(filepath.Join(planted, "tsserver"), []byte("#!/bin/sh\n"), 0o755)
	look := Look(planted+":"+bin, []string{ws})
	cases := []struct{ command, want string }{
		{"gopls", filepath.Join(bin, "gopls")},
		{filepath.Join(opt, "gopls"), filepath.Join(opt, "gopls")},
		{"bin/gopls", ""},
		{opt, ""},
		{filepath.Join(opt, "notes"), ""},
		{filepath.Join(opt, "missing"), ""},
	}
	for _, c := range cases {
		got, err := look(c.command)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("look(%q) = %q, %v; want %q", c.command, got, err, c.want)
		}
	}
	// Found only in the workspace: not taken, and the error says where.
	_, err := look("tsserver")
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Skipped != filepath.Join(planted, "tsserver") || !strings.Contains(err.Error(), "on PATH only as "+nf.Skipped) {
		t.Errorf("a program only in the workspace: %v", err)
	}
}

// TestInterpreterAt: a script's interpreter is taken at its full path
// or found by look, resolved; a binary, or an interpreter not found, has
// none.
func TestInterpreterAt(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "opt", "node")
	os.MkdirAll(filepath.Dir(node), 0o755)
	os.WriteFile(node, []byte("\x7fELF"), 0o755)
	os.Symlink(node, filepath.Join(dir, "node-link"))
	scripts := map[string]string{"abs": "#!" + filepath.Join(dir, "node-link") + "\n", "env": "#!/usr/bin/env -S node\n",
		"missing": "#!/usr/bin/env deno\n", "binary": "\x7fELF"}
	look := func(name string) (string, error) {
		if name == "node" {
			return filepath.Join(dir, "node-link"), nil
		}
		return "", errors.New("not found")
	}
	for name, want := range map[string]string{"abs": node, "env": node, "missing": "", "binary": ""} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(scripts[name]), 0o755)
		if got := InterpreterAt(p, look); got != want {
			t.Errorf("%s: InterpreterAt = %q, want %q", name, got, want)
		}
	}
}
