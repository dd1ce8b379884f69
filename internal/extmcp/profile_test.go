package extmcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	_, err := BuildProfile(sp, t.TempDir(), root, []string{"HOME=" + home, "PATH=/usr/bin:/bin"})
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
	pr, err := BuildProfile(sp, t.TempDir(), root, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SECRET=s3"})
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "x")
	want := []string{"API_KEY=k1", "FILE=" + data + "/f.json", "HOME=" + data, "KEY=k1", "LEAK=", "PATH=/usr/bin:/bin"}
	if strings.Join(pr.Env, "\n") != strings.Join(want, "\n") {
		t.Errorf("env:\n%s\nwant:\n%s", strings.Join(pr.Env, "\n"), strings.Join(want, "\n"))
	}
}
