package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspace(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tmp, "project")
	for _, d := range []string{ws, filepath.Join(ws, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(ws, "f.go")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	fileLink := filepath.Join(tmp, "file-link")
	if err := os.Symlink(file, fileLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "gone"), filepath.Join(tmp, "dangling")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp)
	for _, c := range []struct {
		name, path, want, err string
	}{
		{name: "folder", path: ws, want: ws},
		{name: "through a link", path: link, want: ws},
		{name: "link to a subfolder", path: filepath.Join(link, "sub"), want: filepath.Join(ws, "sub")},
		{name: "relative", path: "project", want: ws},
		{name: "relative through a link", path: "link/../link/sub/..", want: ws},
		{name: "uncleaned", path: ws + "/./sub/../", want: ws},
		{name: "missing", path: filepath.Join(tmp, "missing"), err: "missing: no such folder"},
		{name: "dangling link", path: filepath.Join(tmp, "dangling"), err: "dangling: no such folder"},
		{name: "file", path: file, err: "f.go is not a folder"},
		{name: "link to a file", path: fileLink, err: "file-link is not a folder"},
		{name: "empty", path: "", err: "no workspace folder given"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Workspace(c.path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Workspace(%q) = %q, %v; want an error with %q", c.path, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("Workspace(%q) = %q, %v; want %q", c.path, got, err, c.want)
			}
		})
	}
}
