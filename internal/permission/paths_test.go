package permission

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestSearchPath(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	os.MkdirAll(filepath.Join(ws, ".venv", "bin"), 0o755)
	link := filepath.Join(root, "venv-link")
	os.Symlink(filepath.Join(ws, ".venv", "bin"), link)
	for _, tc := range []struct {
		path          string
		kept, dropped []string
	}{
		{"/usr/bin:/bin", []string{"/usr/bin", "/bin"}, nil},
		{".:bin::/usr/bin", []string{"/usr/bin"}, nil},
		{ws + "/.venv/bin:/usr/bin", []string{"/usr/bin"}, []string{ws + "/.venv/bin"}},
		{ws + ":/usr/bin", []string{"/usr/bin"}, []string{ws}},
		{link + ":/usr/bin", []string{"/usr/bin"}, []string{link}},
		{ws + "x/bin:/usr/bin", []string{ws + "x/bin", "/usr/bin"}, nil},
	} {
		kept, dropped := SearchPath(tc.path, []string{ws})
		if !reflect.DeepEqual(kept, tc.kept) || !reflect.DeepEqual(dropped, tc.dropped) {
			t.Errorf("SearchPath(%q) = %q, %q; want %q, %q", tc.path, kept, dropped, tc.kept, tc.dropped)
		}
	}
}

func TestUntrusted(t *testing.T) {
	for _, tc := range []struct {
		writes []Access
		want   []string
	}{
		{nil, []string{"/w"}},
		{[]Access{AccessWorkspace, AccessNone}, []string{"/w"}},
		{[]Access{AccessNone, AccessHome}, []string{"/w", "/h"}},
		{[]Access{AccessFull}, []string{"/w", "/h"}},
	} {
		if got := Untrusted("/w", "/h", tc.writes); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Untrusted(%v) = %v, want %v", tc.writes, got, tc.want)
		}
	}
}

// TestGuardedPaths: the names in the workspace (and the home folder only
// where the scope reaches it), the repository the workspace is in, and the
// git folder and common folder a worktree's .git file points to.
func TestGuardedPaths(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	repo := filepath.Join(home, "repo")
	wt := filepath.Join(home, "wt")
	gitdir := filepath.Join(repo, ".git", "worktrees", "wt")
	os.MkdirAll(gitdir, 0o755)
	os.MkdirAll(filepath.Join(wt, "sub"), 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644)
	os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644)
	paths := func(gs []Guarded) map[string]bool {
		m := map[string]bool{}
		for _, g := range gs {
			m[g.Path] = g.Dir
		}
		return m
	}

	g := paths(GuardedPaths(AccessWorkspace, wt, home))
	for p, dir := range map[string]bool{filepath.Join(wt, ".vscode"): true, filepath.Join(wt, ".mcp.json"): false, filepath.Join(wt, ".git"): false} {
		if d, ok := g[p]; !ok || d != dir {
			t.Errorf("workspace: %s missing or wrong kind (%v, %v)", p, d, ok)
		}
	}
	if _, ok := g[filepath.Join(home, ".bashrc")]; ok {
		t.Error("write: workspace guards the home folder's .bashrc, outside its scope")
	}
	if _, ok := g[gitdir]; ok {
		t.Error("write: workspace guards the git folder outside its scope")
	}
	if GuardedPaths(AccessNone, wt, home) != nil {
		t.Error("write: none has guarded paths")
	}

	// No scope lifts them: write: full guards the same names.
	g = paths(GuardedPaths(AccessFull, wt, home))
	for _, p := range []string{filepath.Join(home, ".bashrc"), filepath.Join(wt, ".vscode"), gitdir} {
		if _, ok := g[p]; !ok {
			t.Errorf("write: full: %s is not guarded", p)
		}
	}

	g = paths(GuardedPaths(AccessHome, filepath.Join(wt, "sub"), home))
	for _, p := range []string{filepath.Join(home, ".bashrc"), filepath.Join(home, ".gitconfig"), filepath.Join(wt, ".git"), gitdir, filepath.Join(repo, ".git")} {
		if _, ok := g[p]; !ok {
			t.Errorf("write: home from a worktree's subfolder: %s is not guarded (%v)", p, g)
		}
	}
}

// TestClosedPaths: a symlinked ~/.gemini/extensions is closed where it
// leads, and so is an extension folder symlinked from it.
func TestClosedPaths(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	exts, other := filepath.Join(root, "dotfiles", "exts"), filepath.Join(root, "dev", "other-ext")
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	os.MkdirAll(exts, 0o755)
	os.MkdirAll(other, 0o755)
	os.Symlink(exts, filepath.Join(home, ".gemini", "extensions"))
	os.Symlink(other, filepath.Join(exts, "other"))
	got := ClosedPaths(ClosedInputs{Home: home, TempDirs: []string{"/tmp"}})
	for _, want := range []string{filepath.Join(home, ".gemini"), exts, other, "/tmp/gemini/ide",
		filepath.Join(home, ".claude", "ide"), filepath.Join(home, ".config", "gemkit")} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not closed: %v", want, got)
		}
	}
	// gemkit's agent configuration is closed under XDG_CONFIG_HOME and
	// ~/.config alike: a plain-shell `gemkit run` reads the second.
	got = ClosedPaths(ClosedInputs{Home: home, ConfigDir: filepath.Join(root, "xdg")})
	for _, want := range []string{filepath.Join(root, "xdg", "gemkit"), filepath.Join(home, ".config", "gemkit")} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not closed with XDG_CONFIG_HOME set: %v", want, got)
		}
	}
	r := Resolve(Policy{}, Where{Workspace: root, Home: home, Closed: ClosedInputs{TempDirs: []string{"/tmp"}}, OwnFolder: filepath.Join(exts, "other")})
	if slices.Contains(r.Closed, other) || !slices.Contains(r.Closed, exts) {
		t.Errorf("the running extension's own folder must stay open to it: %v", r.Closed)
	}
}

func TestHostLoopback(t *testing.T) {
	for h, want := range map[string]bool{"localhost": true, "localhost:8080": true, "http://127.0.0.1:11434": true, "[::1]:3000": true,
		"dev.localhost": true, "0.0.0.0:80": true, "localhost.example.com": false, "api.example.com": false, "10.0.0.1": false} {
		ph, err := ParseHost(h)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if ph.Loopback() != want {
			t.Errorf("%s: Loopback() = %v", h, !want)
		}
	}
}

// TestProtectedPathsByKind: the workspace's existing .env.<mode> files
// whatever the mode; a name the manifest lifts left out at the
// workspace's top only; a home start-up file that is a link into the
// workspace (a dotfiles repository) protected where it leads; the
// core.hooksPath folder of a repository, absent, protected by its first
// missing folder; node_modules above an extension's folder; nothing the
// write scope does not reach.
func TestProtectedPathsByKind(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "dotfiles")
	ext := filepath.Join(ws, "exts", "linked")
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.MkdirAll(ext, 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\thooksPath = .husky/_\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env.staging"), nil, 0o644)
	os.WriteFile(filepath.Join(ws, "bashrc"), nil, 0o644)
	os.Symlink(filepath.Join(ws, "bashrc"), filepath.Join(home, ".bashrc"))
	g := map[string]bool{}
	for _, p := range ProtectedPaths(GuardInputs{Write: AccessWorkspace, Workspace: ws, Home: home, Lifted: []string{".vscode"}, ExtensionFolders: []string{ext}}) {
		g[p.Path] = p.Dir
	}
	for p, dir := range map[string]bool{
		filepath.Join(ws, ".env.staging"): false, filepath.Join(ws, ".env"): false, filepath.Join(ws, "GEMINI.md"): false,
		filepath.Join(ws, "bashrc"): false, filepath.Join(ws, ".husky"): true, filepath.Join(ws, "node_modules"): true,
		filepath.Join(ws, "exts", "node_modules"): true, filepath.Join(ws, ".idea"): true,
	} {
		if d, ok := g[p]; !ok || d != dir {
			t.Errorf("%s: protected %v (folder %v), want folder %v", p, ok, d, dir)
		}
	}
	for _, p := range []string{filepath.Join(ws, ".vscode"), filepath.Join(home, ".bashrc"), filepath.Join(home, "node_modules")} {
		if _, ok := g[p]; ok {
			t.Errorf("%s is protected", p)
		}
	}
}

// TestClosedOf: the closed inputs of an environment are its home and
// config folders and every temporary folder a companion's discovery
// file may lie in: the person's three variables, this process's
// os.TempDir() and /tmp.
func TestClosedOf(t *testing.T) {
	t.Setenv("TMPDIR", "/own")
	env := map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "/c", "TMPDIR": "/t1", "TMP": "/t2", "TEMP": "/t3", "KUBECONFIG": "/k"}
	in := ClosedOf(func(k string) string { return env[k] })
	if in.Home != "/h" || in.ConfigDir != "/c" || !slices.Equal(in.TempDirs, []string{"/t1", "/t2", "/t3", "/own", "/tmp"}) || in.Getenv("KUBECONFIG") != "/k" {
		t.Errorf("ClosedOf = %+v", in)
	}
}
