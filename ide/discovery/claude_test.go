package discovery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
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

func TestCleanUnservedClaude(t *testing.T) {
	dir := t.TempDir()
	served := gemkittest.ServedPort(t)
	dead := gemkittest.ClosedPort(t)
	me, other := os.Getpid(), os.Getppid()
	lock := func(pid int) string {
		return `{"pid":` + strconv.Itoa(pid) + `,"workspaceFolders":["/w"],"transport":"ws"}`
	}
	files := []struct {
		name, content string
		keep          bool
	}{
		{ClaudeLockName(served), lock(me), true},        // a live companion of this editor
		{ClaudeLockName(dead), lock(me), false},         // a killed companion of this editor
		{ClaudeLockName(1), lock(me), true},             // the caller's own port (keep)
		{"2.lock", lock(other), true},                   // another editor's: not ours to judge
		{"3.lock", `{"workspaceFolders":["/w"]}`, true}, // no pid: Claude Code probes it itself
		{"4.lock", "not json", true},
		{"x.lock", lock(me), true},
		{"05.lock", lock(me), true},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanUnservedClaude(dir, me, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || filepath.Base(removed[0]) != ClaudeLockName(dead) {
		t.Fatalf("removed %v", removed)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f.name)); f.keep != (err == nil) {
			t.Errorf("%s: kept=%v, want %v", f.name, err == nil, f.keep)
		}
	}
	if removed, err := CleanUnservedClaude(filepath.Join(dir, "missing"), me, 0); err != nil || removed != nil {
		t.Fatalf("missing dir: %v %v", removed, err)
	}
}
