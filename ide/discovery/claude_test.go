package discovery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestClaudeLockDir(t *testing.T) {
	for _, tc := range []struct {
		name, configDir, home, want string
	}{
		{"config dir set", "/cfg", "/home/u", "/cfg/ide"},
		{"home", "", "/home/u", "/home/u/.claude/ide"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"CLAUDE_CONFIG_DIR": tc.configDir}
			if got := ClaudeLockDir(func(k string) string { return env[k] }, tc.home); got != tc.want {
				t.Errorf("ClaudeLockDir = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWriteClaudeLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ide")
	path, err := WriteClaudeLock(dir, 4242, ClaudeLock{PID: 7, IDEName: "Neovim", Transport: "ws", AuthToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "4242.lock") {
		t.Errorf("path = %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"authToken":"tok","ideName":"Neovim","pid":7,"transport":"ws","workspaceFolders":[]}`
	canon, _ := json.Marshal(got)
	if string(canon) != want {
		t.Errorf("lock = %s, want %s", canon, want)
	}
	if _, err := WriteClaudeLock(dir, 0, ClaudeLock{}); err == nil {
		t.Error("port 0 accepted")
	}
}
