package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// TestQwenLock: with Config.Qwen the companion announces itself to Qwen
// Code with a lock file of its own (0600): the discovery file's port,
// token, workspace and ideInfo, the editor's name as ideName, this
// process as ppid (Qwen Code deletes a lock whose ppid has ended), and
// the bridge command with the lock's own path (no token on it). The file
// follows the workspace, Env names the port and workspace in Qwen Code's
// variables, and a stop removes the file; a stale lock of an ended
// companion is cleaned at start.
func TestQwenLock(t *testing.T) {
	ws, ws2 := t.TempDir(), t.TempDir()
	qwenDir := filepath.Join(t.TempDir(), "qwen", "ide")
	if err := os.MkdirAll(qwenDir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(qwenDir, "1.lock")
	if err := os.WriteFile(stale, []byte(fmt.Sprintf(`{"port":1,"ppid":%d,"workspacePath":%q}`, deadPID(t), ws)), 0o600); err != nil {
		t.Fatal(err)
	}
	bridge := []string{"/opt/gemkit", "ide", "bridge"}
	srv, err := New(Config{Workspace: []string{ws}, DiscoveryDir: filepath.Join(t.TempDir(), "gemini", "ide"), PID: os.Getpid(),
		Qwen: true, QwenLockDir: qwenDir, BridgeCommand: bridge, IDEInfo: ide.IDEInfo{Name: "neovim", DisplayName: "Neovim"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	<-srv.Ready()

	lock := filepath.Join(qwenDir, strconv.Itoa(srv.Port())+".lock")
	if srv.QwenLockPath() != lock {
		t.Errorf("QwenLockPath %s, want %s", srv.QwenLockPath(), lock)
	}
	read := func() map[string]any {
		t.Helper()
		fi, err := os.Stat(lock)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("lock file: %v %v", fi, err)
		}
		b, _ := os.ReadFile(lock)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := read()
	want := map[string]any{
		"port": float64(srv.Port()), "workspacePath": ws, "authToken": srv.Token(), "ppid": float64(os.Getpid()), "ideName": "Neovim",
		"ideInfo": map[string]any{"name": "neovim", "displayName": "Neovim"},
		"stdio":   map[string]any{"command": "/opt/gemkit", "args": []any{"ide", "bridge", lock}},
	}
	if got, _ := json.Marshal(m); string(got) != mustJSON(want) {
		t.Errorf("lock file\n got %s\nwant %s", got, mustJSON(want))
	}
	var disc ide.DiscoveryFile
	b, _ := os.ReadFile(srv.DiscoveryPath())
	if err := json.Unmarshal(b, &disc); err != nil || disc.Stdio == nil || strings.Join(disc.Stdio.Args, " ") != "ide bridge "+srv.DiscoveryPath() {
		t.Errorf("the discovery file's stdio command: %+v (%v)", disc.Stdio, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale lock of an ended companion is left: %v", err)
	}
	env := srv.Env()
	if env[ide.EnvQwenServerPort] != strconv.Itoa(srv.Port()) || env[ide.EnvQwenWorkspacePath] != ws {
		t.Errorf("Env %v", env)
	}

	if err := srv.UpdateWorkspace([]string{ws2}, nil); err != nil {
		t.Fatal(err)
	}
	if m := read(); m["workspacePath"] != ws2 {
		t.Errorf("after the workspace moved the lock file names %v", m["workspacePath"])
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after the stop: %v", err)
	}
}

// TestQwenLockUnwritable: a lock folder that cannot be written (a file in
// its place) costs Qwen Code its announcement only: the companion serves
// Gemini CLI as before.
func TestQwenLockUnwritable(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "qwen")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Qwen: true, QwenLockDir: filepath.Join(blocked, "ide")})
	if _, err := os.Stat(srv.DiscoveryPath()); err != nil {
		t.Fatalf("discovery file: %v", err)
	}
	c := dial(t, srv)
	c.next(ide.MethodContextUpdate, 5*time.Second)
}

// TestQwenLockOff: without Config.Qwen no lock file is written and Env
// names no Qwen Code variable.
func TestQwenLockOff(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ide")
	srv := startServer(t, Config{QwenLockDir: dir})
	if srv.QwenLockPath() != "" {
		t.Errorf("QwenLockPath %q", srv.QwenLockPath())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock folder made: %v", err)
	}
	if env := srv.Env(); env[ide.EnvQwenServerPort] != "" {
		t.Errorf("Env %v", env)
	}
	if ch, err := discovery.ChooseQwen(discovery.QwenChooseOptions{Dir: dir, Cwd: t.TempDir(), Getenv: func(string) string { return "" }}); err != nil || ch.Chosen != nil {
		t.Errorf("ChooseQwen: %+v %v", ch, err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
