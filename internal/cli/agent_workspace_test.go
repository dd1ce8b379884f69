package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWorkspaceThroughLink: a workspace given through a symbolic link is
// the folder it leads to, whichever command names it and however: run
// and chat (--workspace, or the folder they run in), acp (a session's
// folder, handed over as the flag), mcp (--workspace, or its folder) and
// ide serve (--workspace, or its folder).
func TestWorkspaceThroughLink(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(tmp, "project")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	serve := func(cwd string, flags ...string) (string, error) {
		ws, err := workspaceFolders(cwd, flags)
		if err != nil || len(ws) != 1 {
			return "", err
		}
		return ws[0], nil
	}
	for _, c := range []struct {
		name    string
		resolve func() (string, error)
	}{
		{"run --workspace", func() (string, error) { return (&app{}).resolveWorkspace(link) }},
		{"chat in the folder", func() (string, error) { return (&app{cwd: link}).resolveWorkspace("") }},
		{"acp session folder", func() (string, error) { return (&app{cwd: tmp}).resolveWorkspace(link) }},
		{"mcp --workspace", func() (string, error) { return (&app{cwd: tmp}).resolveWorkspace(link) }},
		{"mcp relative --workspace", func() (string, error) { t.Chdir(tmp); return (&app{}).resolveWorkspace("link") }},
		{"ide serve --workspace", func() (string, error) { return serve(tmp, link) }},
		{"ide serve in the folder", func() (string, error) { return serve(link) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.resolve()
			if err != nil || got != real {
				t.Errorf("got %q, %v; want %q", got, err, real)
			}
		})
	}
}
