package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

func readDiscovery(t *testing.T, path string) ide.DiscoveryFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var df ide.DiscoveryFile
	if err := json.Unmarshal(data, &df); err != nil {
		t.Fatal(err)
	}
	return df
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestDiscoveryLifecycle(t *testing.T) {
	ws1, ws2 := t.TempDir(), t.TempDir()
	dir := filepath.Join(t.TempDir(), "gemini", "ide") // does not exist yet
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, discovery.FileName(deadPID(t), 1234))
	staleLegacy := filepath.Join(dir, discovery.LegacyFileName(deadPID(t)))
	live := filepath.Join(dir, discovery.FileName(os.Getppid(), 4321))
	// An earlier companion of this same editor, killed: its port is shut.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	killed := filepath.Join(dir, discovery.FileName(os.Getpid(), ln.Addr().(*net.TCPAddr).Port))
	other := filepath.Join(dir, "unrelated.json")
	for _, p := range []string{stale, staleLegacy, live, killed, other} {
		if err := os.WriteFile(p, []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	srv, err := New(Config{Workspace: []string{ws1, ws2}, DiscoveryDir: dir, PID: os.Getpid(),
		IDEInfo: ide.IDEInfo{Name: "myeditor", DisplayName: "My Editor"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.DiscoveryPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the discovery file exists before Serve")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	<-srv.Ready()

	if want := filepath.Join(dir, fmt.Sprintf("gemini-ide-server-%d-%d.json", os.Getpid(), srv.Port())); srv.DiscoveryPath() != want {
		t.Fatalf("discovery path %s, want %s", srv.DiscoveryPath(), want)
	}
	fi, err := os.Stat(srv.DiscoveryPath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	df := readDiscovery(t, srv.DiscoveryPath())
	want := ide.DiscoveryFile{Port: srv.Port(), WorkspacePath: ws1 + string(os.PathListSeparator) + ws2,
		AuthToken: srv.Token(), IDEInfo: &ide.IDEInfo{Name: "myeditor", DisplayName: "My Editor"}}
	gotJSON, _ := json.Marshal(df)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("discovery file %+v, want %+v", df, want)
	}
	if len(srv.Token()) < 32 {
		t.Fatalf("token too short: %d hex digits", len(srv.Token()))
	}
	for _, p := range []string{stale, staleLegacy, killed} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale file %s not removed", filepath.Base(p))
		}
	}
	for _, p := range []string{live, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("file %s should have been kept: %v", filepath.Base(p), err)
		}
	}
	env := srv.Env()
	wantEnv := map[string]string{
		ide.EnvServerPort: fmt.Sprint(srv.Port()), ide.EnvWorkspacePath: want.WorkspacePath,
		ide.EnvAuthToken: srv.Token(), ide.EnvPID: fmt.Sprint(os.Getpid()),
	}
	if fmt.Sprint(env) != fmt.Sprint(wantEnv) {
		t.Fatalf("env %v, want %v", env, wantEnv)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Stat(srv.DiscoveryPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("discovery file left after a clean stop")
	}
	if _, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/keep-alive", srv.Port())); err == nil {
		t.Fatal("still listening after Serve returned")
	}
	// An editor report that arrives during or after the stop (the editor
	// protocol reads on while the server goes) must not write the file
	// back.
	trusted := true
	if err := srv.UpdateWorkspace([]string{ws2}, &trusted); err != nil {
		t.Fatalf("UpdateWorkspace after the stop: %v", err)
	}
	if _, err := os.Stat(srv.DiscoveryPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a workspace update after the stop wrote the discovery file again")
	}
}

// TestWatchPID: when the editor process ends, the server stops and removes
// its discovery file.
func TestWatchPID(t *testing.T) {
	editor := exec.Command("sleep", "60")
	if err := editor.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { editor.Wait(); close(exited) }()
	srv, err := New(Config{Workspace: []string{t.TempDir()}, DiscoveryDir: t.TempDir(), PID: editor.Process.Pid, WatchPID: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	<-srv.Ready()
	editor.Process.Kill()
	<-exited
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not stop after the editor process ended")
	}
	if _, err := os.Stat(srv.DiscoveryPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("discovery file left after the editor ended")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	file := writeFile(t, t.TempDir(), "f", "x")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"relative workspace", Config{Workspace: []string{"rel"}}, "not an absolute path"},
		{"missing workspace", Config{Workspace: []string{"/does/not/exist"}}, "no such file"},
		{"file as workspace", Config{Workspace: []string{file}}, "not a directory"},
		{"negative pid", Config{PID: -1}, "invalid editor pid"},
		{"watched editor already gone", Config{PID: deadPID(t), WatchPID: true}, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestServeTwice(t *testing.T) {
	srv := startServer(t, Config{})
	if err := srv.Serve(context.Background()); err == nil {
		t.Fatal("a second Serve was accepted")
	}
}

func TestWriteFile(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	ed := newFakeEditor()
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: ed})
	existing, target, secret := writeFileFixture(t, ws, outside)

	tests := []struct {
		name     string
		body     string
		want     int
		wantFile string // file that must then hold the content
		mode     os.FileMode
	}{
		{"new file", fmt.Sprintf(`{"path":%q,"content":"hello"}`, filepath.Join(ws, "new.txt")), 200, filepath.Join(ws, "new.txt"), 0o644},
		{"new file in new dirs", fmt.Sprintf(`{"path":%q,"content":"hello"}`, filepath.Join(ws, "a", "b", "c.txt")), 200, filepath.Join(ws, "a", "b", "c.txt"), 0o644},
		{"existing file keeps its mode", fmt.Sprintf(`{"path":%q,"content":"hello"}`, existing), 200, existing, 0o755},
		{"empty content", fmt.Sprintf(`{"path":%q,"content":""}`, filepath.Join(ws, "empty.txt")), 200, filepath.Join(ws, "empty.txt"), 0o644},
		{"symlink inside writes its target", fmt.Sprintf(`{"path":%q,"content":"hello"}`, filepath.Join(ws, "link-inside.txt")), 200, target, 0o644},
		{"outside", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(outside, "x.txt")), 403, "", 0},
		{"dot-dot escape", fmt.Sprintf(`{"path":%q,"content":"x"}`, ws+"/../"+filepath.Base(outside)+"/y.txt"), 403, "", 0},
		{"symlinked file escape", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(ws, "link-out.txt")), 403, "", 0},
		{"symlinked dir escape", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(ws, "dir-out", "z.txt")), 403, "", 0},
		{"the workspace itself", fmt.Sprintf(`{"path":%q,"content":"x"}`, ws), 400, "", 0},
		{"a directory", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(ws, "subdir")), 400, "", 0},
		{"relative path", `{"path":"rel.txt","content":"x"}`, 400, "", 0},
		{"missing content", fmt.Sprintf(`{"path":%q}`, filepath.Join(ws, "n.txt")), 400, "", 0},
		{"not JSON", `path=x`, 400, "", 0},
		// encoding/json would write U+FFFD in place of each of these.
		{"latin-1 bytes", fmt.Sprintf("{\"path\":%q,\"content\":\"caf\xe9\"}", filepath.Join(ws, "latin1.txt")), 400, "", 0},
		{"lone surrogate escape", fmt.Sprintf(`{"path":%q,"content":"a\ud800b"}`, filepath.Join(ws, "surrogate.txt")), 400, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := httpDo(t, srv, "POST", "/write-file", map[string]string{"Authorization": "Bearer " + srv.Token(), "Content-Type": "application/json"}, tt.body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			var m map[string]string
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("body not JSON: %s", body)
			}
			if tt.want != 200 {
				if m["error"] == "" {
					t.Fatalf("refusal without a clear error: %s", body)
				}
				if strings.Contains(tt.name, "latin-1") || strings.Contains(tt.name, "surrogate") {
					checkNotUTF8Refusal(t, ws, m["error"], body)
				}
				return
			}
			if m["status"] != "success" {
				t.Fatalf("body %s", body)
			}
			var content struct {
				Content string `json:"content"`
			}
			json.Unmarshal([]byte(tt.body), &content)
			got, err := os.ReadFile(tt.wantFile)
			if err != nil || string(got) != content.Content {
				t.Fatalf("file holds %q (%v)", got, err)
			}
			fi, _ := os.Stat(tt.wantFile)
			if fi.Mode().Perm() != tt.mode {
				t.Fatalf("mode %v, want %v", fi.Mode().Perm(), tt.mode)
			}
		})
	}
	if got, _ := os.ReadFile(secret); string(got) != "secret" {
		t.Fatal("a file outside the workspace was changed")
	}
	if fi, err := os.Lstat(filepath.Join(ws, "link-inside.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("writing through a symlink replaced the link")
	}
	ents, _ := os.ReadDir(ws)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if len(ed.written) != 5 || ed.written[0] != filepath.Join(ws, "new.txt") {
		t.Fatalf("editor told about %v", ed.written)
	}
}

// writeFileFixture lays out what TestWriteFile writes to and through: an
// executable file, a file with a symlink to it inside the workspace, a
// secret outside with a symlink to it, a symlink to the outside folder,
// and a subfolder.
func writeFileFixture(t *testing.T, ws, outside string) (existing, target, secret string) {
	t.Helper()
	existing = writeFile(t, ws, "exists.sh", "old")
	if err := os.Chmod(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	target = writeFile(t, ws, "target.txt", "old")
	if err := os.Symlink(target, filepath.Join(ws, "link-inside.txt")); err != nil {
		t.Fatal(err)
	}
	secret = writeFile(t, outside, "secret.txt", "secret")
	if err := os.Symlink(secret, filepath.Join(ws, "link-out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "dir-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return existing, target, secret
}

// checkNotUTF8Refusal checks that content that is not UTF-8 is refused
// with words that say so, and that neither such file was written.
func checkNotUTF8Refusal(t *testing.T, ws, errText string, body []byte) {
	t.Helper()
	if !strings.Contains(errText, "UTF") {
		t.Fatalf("refusal does not say why: %s", body)
	}
	for _, f := range []string{"latin1.txt", "surrogate.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Fatalf("refused, yet %s was written", f)
		}
	}
}

// TestWriteInRootRaceSafe: even when a directory inside the workspace is
// swapped for a symlink to elsewhere after the path was checked, the write
// cannot leave the workspace.
func TestWriteInRootRaceSafe(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "swapped")); err != nil {
		t.Fatal(err)
	}
	err := writeInRoot(ws, filepath.Join(ws, "swapped", "x.txt"), []byte("x"))
	if err == nil {
		t.Fatal("wrote through a symlink out of the workspace")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("files appeared outside: %v", ents)
	}
}
