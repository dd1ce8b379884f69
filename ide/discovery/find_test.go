package discovery

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deadPID returns the pid of a process that has exited: started and
// waited for, so it is certainly not running now.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

type fixture struct {
	t         *testing.T
	dir, root string
}

func newFixture(t *testing.T) *fixture {
	root := t.TempDir()
	dir := filepath.Join(root, "gemini", "ide")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, dir: dir, root: root}
}

// folder makes a workspace folder under the fixture root.
func (f *fixture) folder(name string) string {
	p := filepath.Join(f.root, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// write writes a discovery file with content v (a string is written as is).
func (f *fixture) write(name string, v any) string {
	f.t.Helper()
	var data []byte
	if s, ok := v.(string); ok {
		data = []byte(s)
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			f.t.Fatal(err)
		}
	}
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) choose(idePID int, cwd string, env map[string]string) *Choice {
	f.t.Helper()
	ch, err := Choose(ChooseOptions{Dir: f.dir, IDEPID: idePID, Cwd: cwd, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		f.t.Fatal(err)
	}
	return ch
}

func chosen(ch *Choice) string {
	if ch.Chosen == nil {
		return "<none>"
	}
	return ch.Chosen.Name
}

func TestChooseOrderAndTieBreak(t *testing.T) {
	f := newFixture(t)
	ws := f.folder("proj")
	sub := f.folder("proj/pkg/sub")
	other := f.folder("other")
	me := os.Getpid()
	dead := deadPID(t)
	// Three editors hold proj: a dead one with a large pid, this live
	// process (small pid compared with 99999999) and the IDE's own pid.
	f.write(FileName(99999999, 1001), map[string]any{"port": 1001, "workspacePath": ws})
	f.write(FileName(me, 1002), map[string]any{"port": 1002, "workspacePath": ws})
	f.write(FileName(dead, 1003), map[string]any{"port": 1003, "workspacePath": other})
	f.write("gemini-ide-server-7-1004.json.tmp", map[string]any{"port": 1004, "workspacePath": ws})
	f.write("notes.txt", "hello")

	ch := f.choose(12345, sub, nil)
	if got := chosen(ch); got != FileName(me, 1002) {
		t.Errorf("alive before dead: chose %s (%s)", got, ch.Reason)
	}
	var order []string
	for _, c := range ch.Candidates {
		order = append(order, c.Name)
	}
	wantOrder := []string{FileName(me, 1002), FileName(99999999, 1001), FileName(dead, 1003)}
	if dead > 99999999 {
		t.Fatalf("unexpected pid %d", dead)
	}
	if strings.Join(order, ",") != strings.Join(wantOrder, ",") {
		t.Errorf("order %v; want %v", order, wantOrder)
	}

	// The IDE's own pid beats being alive.
	f.write(FileName(99999998, 1005), map[string]any{"port": 1005, "workspacePath": ws})
	if got := chosen(f.choose(99999998, sub, nil)); got != FileName(99999998, 1005) {
		t.Errorf("pid match first: chose %s", got)
	}
	// GEMINI_CLI_IDE_SERVER_PORT breaks a tie between valid files.
	ch = f.choose(12345, sub, map[string]string{"GEMINI_CLI_IDE_SERVER_PORT": "1001"})
	if got := chosen(ch); got != FileName(99999999, 1001) {
		t.Errorf("env port tie-break: chose %s (%s)", got, ch.Reason)
	}
	// A port in the env that no valid file has: the first valid one.
	if got := chosen(f.choose(12345, sub, map[string]string{"GEMINI_CLI_IDE_SERVER_PORT": "1003"})); got != FileName(me, 1002) {
		t.Errorf("env port of an invalid file: chose %s", got)
	}
	// Only one valid: it, whatever the order.
	if got := chosen(f.choose(12345, other, nil)); got != FileName(dead, 1003) {
		t.Errorf("only valid: chose %s", got)
	}
}

func TestChooseMismatchKeepsBestSorted(t *testing.T) {
	f := newFixture(t)
	a, b := f.folder("a"), f.folder("b")
	elsewhere := f.folder("elsewhere")
	f.write(FileName(99999990, 2001), map[string]any{"port": 2001, "workspacePath": a})
	f.write(FileName(99999991, 2002), map[string]any{"port": 2002, "workspacePath": b})
	f.write(FileName(99999992, 2003), "{not json")
	ch := f.choose(1, elsewhere, nil)
	if got := chosen(ch); got != FileName(99999991, 2002) {
		t.Errorf("best-sorted mismatched: chose %s", got)
	}
	var mm *MismatchError
	if !errors.As(ch.Chosen.Workspace, &mm) || len(mm.Folders) != 1 || mm.Folders[0] != b {
		t.Errorf("workspace error %v", ch.Chosen.Workspace)
	}
	if got := chosen(f.choose(1, elsewhere, map[string]string{"GEMINI_CLI_IDE_SERVER_PORT": "2001"})); got != FileName(99999990, 2001) {
		t.Errorf("mismatch with env port: chose %s", got)
	}
	bad := ch.Candidates[0]
	if bad.Name != FileName(99999992, 2003) || bad.Contents != nil || bad.Err == nil {
		t.Errorf("unparsable file: %+v", bad)
	}
}

func TestChooseOwnerAndLegacy(t *testing.T) {
	f := newFixture(t)
	ws := f.folder("ws")
	elsewhere := f.folder("elsewhere")
	foreign := f.write(FileName(99999999, 3001), map[string]any{"port": 3001, "workspacePath": ws})
	f.write(FileName(99999000, 3002), map[string]any{"port": 3002, "workspacePath": ws})
	if os.Getuid() == 0 {
		if err := os.Chown(foreign, 4321, 4321); err != nil {
			t.Fatal(err)
		}
	} else {
		uid := os.Getuid() + 1
		ch, _ := Choose(ChooseOptions{Dir: f.dir, IDEPID: 1, Cwd: ws, UID: &uid})
		if ch.Chosen != nil {
			t.Fatalf("files of another uid were used: %s", ch.Chosen.Name)
		}
		t.Log("not root: the chown case is shown with a different UID option instead")
		return
	}
	ch := f.choose(1, ws, nil)
	if got := chosen(ch); got != FileName(99999000, 3002) {
		t.Errorf("other owner not ignored: chose %s", got)
	}
	var oe *OwnerError
	if !errors.As(ch.Candidates[0].Err, &oe) || oe.Owner != 4321 {
		t.Errorf("owner error: %+v", ch.Candidates[0])
	}

	// A legacy file for the IDE pid is taken first, even for another
	// workspace (the workspace check comes later, at connect).
	f.write(LegacyFileName(777), map[string]any{"port": 3003, "workspacePath": elsewhere})
	ch = f.choose(777, ws, nil)
	if got := chosen(ch); got != LegacyFileName(777) || !ch.Chosen.Legacy {
		t.Errorf("legacy first: chose %s", got)
	}
	if ch.Chosen.Workspace == nil {
		t.Error("legacy file's mismatch not reported")
	}
	// A legacy file of another owner, or not an object, is skipped.
	if err := os.Chown(filepath.Join(f.dir, LegacyFileName(777)), 4321, 4321); err != nil {
		t.Fatal(err)
	}
	if got := chosen(f.choose(777, ws, nil)); got != FileName(99999000, 3002) {
		t.Errorf("foreign legacy file used: %s", got)
	}
	f.write(LegacyFileName(778), "[1,2]")
	if got := chosen(f.choose(778, ws, nil)); got != FileName(99999000, 3002) {
		t.Errorf("non-object legacy file used: %s", got)
	}
}

func TestChooseRealPaths(t *testing.T) {
	f := newFixture(t)
	real := f.folder("real/project")
	link := filepath.Join(f.root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	// The editor names the folder through a symlink; the CLI runs in the
	// real folder, and the other way round: both match.
	f.write(FileName(99999999, 4001), map[string]any{"port": 4001, "workspacePath": link})
	if got := chosen(f.choose(1, filepath.Join(real), nil)); got != FileName(99999999, 4001) {
		t.Errorf("symlinked workspace: chose %s", got)
	}
	if c := f.choose(1, real, nil).Chosen; c == nil || c.Workspace != nil {
		t.Errorf("symlinked workspace not valid: %+v", c)
	}
	if err := ValidateWorkspace(ptr(real), link); err != nil {
		t.Errorf("cwd through symlink: %v", err)
	}
	// Several folders, a URL-escaped one among them.
	spaced := f.folder("with space")
	multi := strings.Join([]string{"/nonexistent/x", strings.ReplaceAll(spaced, " ", "%20")}, string(os.PathListSeparator))
	if err := ValidateWorkspace(ptr(multi), filepath.Join(spaced, "deeper/not/yet")); err != nil {
		t.Errorf("multi-root with escapes: %v", err)
	}
	// A sibling with a common prefix is not inside.
	if err := ValidateWorkspace(ptr(real), real+"2"); err == nil {
		t.Error("prefix sibling accepted")
	}
	// An empty entry does not make every directory valid.
	if err := ValidateWorkspace(ptr(real+string(os.PathListSeparator)), f.root); err == nil {
		t.Error("empty entry accepted the cwd")
	}
}

func ptr(s string) *string { return &s }

func TestWorkspaceErrorsWording(t *testing.T) {
	dir := t.TempDir()
	if err := ValidateWorkspace(nil, dir); err != ErrNoWorkspace ||
		err.Error() != "Failed to connect to IDE companion extension. Please ensure the extension is running. To install the extension, run /ide install." {
		t.Errorf("no workspace: %v", err)
	}
	if err := ValidateWorkspace(ptr(""), dir); err != ErrEmptyWorkspace ||
		err.Error() != "To use this feature, please open a workspace folder in your IDE and try again." {
		t.Errorf("empty workspace: %v", err)
	}
	err := ValidateWorkspace(ptr("/a/b:/c"), dir)
	want := "Directory mismatch. Gemini CLI is running in a different location than the open workspace in the IDE. Please run the CLI from one of the following directories: /a/b, /c"
	if err == nil || err.Error() != want {
		t.Errorf("mismatch: %v", err)
	}
}

func TestParseContentsLenient(t *testing.T) {
	c, err := ParseContents([]byte(`{"port":"8080","workspacePath":null,"authToken":"t","ideInfo":{"name":"x","displayName":"X"},"stdio":{"command":"ide","args":["--stdio"]},"extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8080 || c.PortText != "8080" || c.WorkspacePath != nil || *c.AuthToken != "t" || c.IDEInfo.DisplayName != "X" || c.Stdio.Args[0] != "--stdio" {
		t.Errorf("config %+v", c)
	}
	for _, bad := range []string{`null`, `"x"`, `12`, `[]`, `{`} {
		if _, err := ParseContents([]byte(bad)); err == nil {
			t.Errorf("ParseContents(%s) accepted", bad)
		}
	}
}

func TestChooseMissingDir(t *testing.T) {
	_, err := Choose(ChooseOptions{Dir: filepath.Join(t.TempDir(), "none"), IDEPID: 1, Cwd: "/"})
	if !errors.Is(err, ErrDirMissing) {
		t.Errorf("err = %v", err)
	}
}
