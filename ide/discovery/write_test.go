package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gemini", "ide")
	f := ide.DiscoveryFile{Port: 4242, WorkspacePath: "/a" + string(os.PathListSeparator) + "/b", AuthToken: "secret",
		IDEInfo: &ide.IDEInfo{Name: "gemkit", DisplayName: "gemkit"}}
	path, err := Write(dir, 77, 4242, f)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "gemini-ide-server-77-4242.json") {
		t.Fatalf("path %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	// The directories Write created are the user's alone.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if di, err := os.Stat(d); err != nil || di.Mode().Perm() != 0o700 {
			t.Fatalf("directory %s: mode %v (%v), want 0700", d, di.Mode().Perm(), err)
		}
	}
	data, _ := os.ReadFile(path)
	want := `{"port":4242,"workspacePath":"/a:/b","authToken":"secret","ideInfo":{"name":"gemkit","displayName":"gemkit"}}`
	if string(data) != want {
		t.Fatalf("content\n got %s\nwant %s", data, want)
	}
	// A rewrite replaces the content atomically and leaves no temp file.
	f.WorkspacePath = "/c"
	if _, err := Write(dir, 77, 4242, f); err != nil {
		t.Fatal(err)
	}
	var back ide.DiscoveryFile
	data, _ = os.ReadFile(path)
	if err := json.Unmarshal(data, &back); err != nil || back.WorkspacePath != "/c" {
		t.Fatalf("rewrite: %s", data)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("extra files left: %v", ents)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("removing a removed file: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("not removed")
	}
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name      string
		pid, port int
	}{{"zero pid", 0, 1}, {"negative pid", -3, 1}, {"zero port", 1, 0}, {"port too big", 1, 70000}} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Write(dir, tt.pid, tt.port, ide.DiscoveryFile{}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	// A directory that exists keeps its mode.
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(shared, 1, 1, ide.DiscoveryFile{}); err != nil {
		t.Fatal(err)
	}
	if di, _ := os.Stat(shared); di.Mode().Perm() != 0o755 {
		t.Fatalf("an existing directory changed mode to %v", di.Mode().Perm())
	}
	// A directory of another user (EACCES) gets advice; root cannot
	// provoke one here, so the hint is checked on its own.
	if h := permissionHint(fmt.Errorf("open x: %w", fs.ErrPermission)); !strings.Contains(h, "TMPDIR") {
		t.Fatalf("permission hint %q", h)
	}
	if h := permissionHint(errors.New("disk full")); h != "" {
		t.Fatalf("hint for another error: %q", h)
	}
	// A directory that cannot be created.
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := Write(filepath.Join(blocker, "ide"), 1, 1, ide.DiscoveryFile{}); err == nil || !strings.Contains(err.Error(), "create directory") {
		t.Fatalf("err %v", err)
	}
}

func TestCleanStale(t *testing.T) {
	dir := t.TempDir()
	dead := exitedPID(t)
	names := map[string]bool{ // name → should survive
		FileName(dead, 1):                     false,
		LegacyFileName(dead):                  false,
		FileName(os.Getpid(), 2):              true,
		LegacyFileName(os.Getpid()):           true,
		"gemini-ide-server-x.json":            true,
		"other.json":                          true,
		".gemini-ide-server-1-2.json.123.tmp": true,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Fatalf("removed %v", removed)
	}
	for n, keep := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if keep != (err == nil) {
			t.Errorf("%s: kept=%v, want %v", n, err == nil, keep)
		}
	}
	if removed, err := CleanStale(filepath.Join(dir, "missing")); err != nil || removed != nil {
		t.Fatalf("missing dir: %v %v", removed, err)
	}
}

func TestEnvAndExportLines(t *testing.T) {
	env := Env(ide.DiscoveryFile{Port: 5, WorkspacePath: "/w/it's here", AuthToken: "tok"}, 9)
	got := ExportLines(env)
	want := "export GEMINI_CLI_IDE_AUTH_TOKEN=tok\n" +
		"export GEMINI_CLI_IDE_PID=9\n" +
		"export GEMINI_CLI_IDE_SERVER_PORT=5\n" +
		"export GEMINI_CLI_IDE_WORKSPACE_PATH='/w/it'\\''s here'\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// The lines evaluate back to the values in a real shell.
	if sh, err := exec.LookPath("sh"); err == nil {
		out, err := exec.Command(sh, "-c", got+`printf %s "$GEMINI_CLI_IDE_WORKSPACE_PATH"`).Output()
		if err != nil || string(out) != "/w/it's here" {
			t.Fatalf("sh read back %q (%v)", out, err)
		}
	}
	if JoinWorkspace([]string{"/a", "/b"}) != "/a"+string(os.PathListSeparator)+"/b" {
		t.Fatal("JoinWorkspace")
	}
}

func TestCleanUnserved(t *testing.T) {
	dir := t.TempDir()
	served := gemkittest.ServedPort(t)
	dead := gemkittest.ClosedPort(t)
	me, other := os.Getpid(), os.Getppid()
	names := map[string]bool{ // name → should survive
		FileName(me, served):     true,  // a live companion of this editor
		FileName(me, dead):       false, // a killed companion of this editor
		FileName(me, 1):          true,  // the caller's own port (keep)
		FileName(other, dead):    true,  // another editor's: not ours to judge
		LegacyFileName(me):       true,  // no port to probe
		"gemini-ide-server.json": true,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanUnserved(dir, me, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || filepath.Base(removed[0]) != FileName(me, dead) {
		t.Fatalf("removed %v", removed)
	}
	for n, keep := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); keep != (err == nil) {
			t.Errorf("%s: kept=%v, want %v", n, err == nil, keep)
		}
	}
	if removed, err := CleanUnserved(filepath.Join(dir, "missing"), me, 0); err != nil || removed != nil {
		t.Fatalf("missing dir: %v %v", removed, err)
	}
}
