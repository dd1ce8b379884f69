package extmcp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
)

// TestDataFolderSymlink: a symlink on the way to the data folder (a tool
// allowed to write the home folder could plant one) is refused.
func TestDataFolderSymlink(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".local", "share"), 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(home, ".local", "share", "gemkit")); err != nil {
		t.Fatal(err)
	}
	root, _ := DataRoot(map[string]string{"HOME": home})
	sp := Spec{Extension: "x", Server: "s", Dir: t.TempDir(), Command: "/bin/sh"}
	_, err := BuildProfile(sp, t.TempDir(), root, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, nil)
	if err == nil || !strings.Contains(err.Error(), "is not a folder of its own") {
		t.Errorf("BuildProfile through a symlink: %v", err)
	}
}

// TestEnv: the server's environment is the entry's env and the settings,
// with PATH and HOME; $HOME and a setting's variable are expanded, any
// other variable is empty.
func TestEnv(t *testing.T) {
	home := t.TempDir()
	root, _ := DataRoot(map[string]string{"HOME": home})
	sp := Spec{Extension: "x", Server: "s", Dir: t.TempDir(), Command: "/bin/sh",
		Env:      map[string]string{"FILE": "$HOME/f.json", "KEY": "${API_KEY}", "LEAK": "$SECRET"},
		Settings: map[string]string{"API_KEY": "k1"}}
	pr, err := BuildProfile(sp, t.TempDir(), root, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SECRET=s3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "x")
	want := []string{"API_KEY=k1", "FILE=" + data + "/f.json", "HOME=" + data, "KEY=k1", "LEAK=", "NODE_USE_ENV_PROXY=1", "PATH=/usr/bin:/bin"}
	if strings.Join(pr.Env, "\n") != strings.Join(want, "\n") {
		t.Errorf("env:\n%s\nwant:\n%s", strings.Join(pr.Env, "\n"), strings.Join(want, "\n"))
	}
}

// TestWidenedPolicy: the default profile writes nothing and reaches no
// host, and what it tries is reported; a widening lets the server write the workspace (its protected
// paths kept read-only) and reach the hosts allowed, gemkit's own
// servers refused.
func TestWidenedPolicy(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	root, _ := DataRoot(map[string]string{"HOME": home})
	environ := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	sp := Spec{Extension: "x", Server: "s", Dir: t.TempDir(), Command: "/bin/sh"}
	pr, err := BuildProfile(sp, ws, root, environ, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := pr.Policy(ws, t.TempDir())
	if pol.Write != permission.AccessNone || len(pol.AllowedHosts) != 0 || len(pol.Guarded) != 0 || !pol.ReportRefusals {
		t.Errorf("default policy: write %q, hosts %v, %d guarded, refusals reported %v", pol.Write, pol.AllowedHosts, len(pol.Guarded), pol.ReportRefusals)
	}
	sp.Widening = extension.Widening{Hosts: []string{"localhost:8080"}, Write: permission.AccessWorkspace}
	if pr, err = BuildProfile(sp, ws, root, environ, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pr.Env, "NODE_USE_ENV_PROXY=1") {
		t.Errorf("a server allowed hosts is not told to follow the proxy: %v", pr.Env)
	}
	pol = pr.Policy(ws, t.TempDir())
	if pol.Write != permission.AccessWorkspace || len(pol.AllowedHosts) != 1 || pol.AllowedHosts[0] != "localhost:8080" || pol.OwnServer == nil {
		t.Errorf("widened policy: write %q, hosts %v", pol.Write, pol.AllowedHosts)
	}
	git := false
	for _, g := range pol.Guarded {
		git = git || g.Path == filepath.Join(ws, ".git")
	}
	if !git {
		t.Errorf("the workspace's .git is not guarded: %+v", pol.Guarded)
	}
}

// TestPinnedTreeProfile: a server pinned from a package runner reads its
// tree, read-only, beside its runtime (node's installation, from its
// program's #! line), though the tree lies in ~/.local/share/gemkit,
// which every other sandboxed process finds closed; it writes only its
// data folder, and reaches no host.
func TestPinnedTreeProfile(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	root, _ := DataRoot(map[string]string{"HOME": home})
	tree := filepath.Join(home, ".local", "share", "gemkit", "packages", "x", "s@1.0.0-1")
	prog := filepath.Join(tree, "node_modules", "pkg", "index.js")
	os.MkdirAll(filepath.Dir(prog), 0o700)
	os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
	sp := Spec{Extension: "x", Server: "s", Dir: t.TempDir(), Command: prog, Tree: tree}
	pr, err := BuildProfile(sp, ws, root, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := pr.Policy(ws, t.TempDir())
	if !slices.Contains(pol.RuntimePaths, tree) || slices.Contains(pol.Caches, tree) || len(pol.Caches) != 1 || len(pol.AllowedHosts) != 0 {
		t.Errorf("runtime %q, caches %q, hosts %q: want the tree read-only among the runtime, the data folder the only write, no host", pol.RuntimePaths, pol.Caches, pol.AllowedHosts)
	}
	if pol.Write != permission.AccessNone {
		t.Errorf("write scope %q", pol.Write)
	}
}
