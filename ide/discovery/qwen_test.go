package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

func TestQwenLockDir(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		name, qwenHome, home, want string
	}{
		{"home", "", "/home/u", "/home/u/.qwen/ide"},
		{"QWEN_HOME", "/srv/q", "/home/u", "/srv/q/ide"},
		{"QWEN_HOME under ~", "~/q", "/home/u", "/home/u/q/ide"},
		{"QWEN_HOME is ~", "~", "/home/u", "/home/u/ide"},
		{"QWEN_HOME relative", "q", "/home/u", filepath.Join(wd, "q", "ide")},
		{"no home", "", "", filepath.Join(os.TempDir(), ".qwen", "ide")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{ide.EnvQwenHome: tc.qwenHome}
			if got := QwenLockDir(func(k string) string { return env[k] }, tc.home); got != tc.want {
				t.Errorf("QwenLockDir = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWriteQwenLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".qwen", "ide")
	f := ide.DiscoveryFile{WorkspacePath: "/a:/b", AuthToken: "tok", PPID: 42, IDEName: "Neovim",
		IDEInfo: &ide.IDEInfo{Name: "neovim", DisplayName: "Neovim"},
		Stdio:   &ide.StdioConfig{Command: "/bin/gemkit", Args: []string{"ide", "bridge", filepath.Join(dir, "4242.lock")}}}
	path, err := WriteQwenLock(dir, 4242, f)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "4242.lock") {
		t.Errorf("path %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v (%v), want 0700", di.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(path)
	want := fmt.Sprintf(`{"port":4242,"workspacePath":"/a:/b","authToken":"tok","ideInfo":{"name":"neovim","displayName":"Neovim"},"stdio":{"command":"/bin/gemkit","args":["ide","bridge",%q]},"ppid":42,"ideName":"Neovim"}`, path)
	if string(data) != want {
		t.Errorf("content\n got %s\nwant %s", data, want)
	}
	if _, err := WriteQwenLock(dir, 70000, f); err == nil {
		t.Error("port 70000 accepted")
	}
}

// TestCleanStaleQwen removes what Qwen Code itself would delete
// (cleanupStaleLockFile in @qwen-code/qwen-code 0.24.4
// packages/core/src/ide/ide-client.ts), and nothing else.
func TestCleanStaleQwen(t *testing.T) {
	dir := t.TempDir()
	ws := t.TempDir()
	dead := exitedPID(t)
	files := map[string]string{
		"1.lock":     fmt.Sprintf(`{"port":1,"ppid":%d,"workspacePath":%q}`, dead, ws),            // dead ppid
		"2.lock":     fmt.Sprintf(`{"port":2,"ppid":%d,"workspacePath":"/nowhere"}`, os.Getpid()), // live ppid, missing folder: kept
		"3.lock":     `{"port":3,"workspacePath":"/nowhere/at/all"}`,                              // no ppid, missing folder
		"4.lock":     fmt.Sprintf(`{"port":4,"workspacePath":%q}`, ws),                            // no ppid, folder exists
		"5.lock":     `not json`,                                                                  // unreadable: the CLI skips it
		"6.lock":     `{"port":6}`,                                                                // neither: kept
		"x.lock":     fmt.Sprintf(`{"ppid":%d}`, dead),                                            // not a lock file name
		"7.lock.tmp": fmt.Sprintf(`{"ppid":%d}`, dead),                                            // same
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanStaleQwen(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "1.lock"), filepath.Join(dir, "3.lock")}
	if fmt.Sprint(removed) != fmt.Sprint(want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != (name == "1.lock" || name == "3.lock") {
			t.Errorf("%s: gone %v", name, gone)
		}
	}
	if removed, err := CleanStaleQwen(filepath.Join(dir, "missing")); err != nil || removed != nil {
		t.Errorf("missing folder: %v %v", removed, err)
	}
}

func TestQwenWorkspace(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b, filepath.Join(a, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	js, _ := json.Marshal([]string{b, a})
	for _, tc := range []struct {
		name, value, cwd string
		want             string // "" valid, else a substring of the error
	}{
		{"path list", a + ":" + b, filepath.Join(a, "sub"), ""},
		{"json array", string(js), b, ""},
		{"relative entries dropped", "a:" + b, a, "Directory mismatch. Qwen Code is running"},
		{"empty entries do not match everything", ":" + b, a, "Directory mismatch"},
		{"empty", "", a, "open a workspace folder"},
		{"not a json array of strings", `[1,2]`, a, "Directory mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.value
			err := ValidateQwenWorkspace(&v, tc.cwd)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	if err := ValidateQwenWorkspace(nil, a); !errors.Is(err, ErrNoWorkspace) {
		t.Errorf("nil: %v", err)
	}
}

// TestChooseQwen follows Qwen Code's order: the lock file of the port
// variable, the legacy files, then the newest lock file of the folder
// whose workspace holds the cwd; stale files are marked, not removed.
func TestChooseQwen(t *testing.T) {
	root := t.TempDir()
	dir, tmp := filepath.Join(root, "qwen", "ide"), filepath.Join(root, "tmp")
	ws1, ws2, other := filepath.Join(root, "ws1"), filepath.Join(root, "ws2"), filepath.Join(root, "other")
	for _, d := range []string{dir, tmp, ws1, ws2, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dead := exitedPID(t)
	now := time.Now()
	write := func(d, name, content string, age time.Duration) {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	me := os.Getpid()
	write(dir, "3001.lock", fmt.Sprintf(`{"port":3001,"workspacePath":%q,"ppid":%d}`, ws1, me), 3*time.Minute)
	write(dir, "3002.lock", fmt.Sprintf(`{"port":3002,"workspacePath":%q,"ppid":%d}`, ws1, me), 2*time.Minute)
	write(dir, "3003.lock", fmt.Sprintf(`{"port":3003,"workspacePath":%q,"ppid":%d}`, ws1, dead), time.Minute) // newest, stale
	write(dir, "3004.lock", fmt.Sprintf(`{"port":3004,"workspacePath":%q,"ppid":%d}`, ws2, me), 4*time.Minute)
	write(dir, "3005.lock", fmt.Sprintf(`{"port":3005,"ppid":%d}`, me), 0) // no workspace: skipped by the scan
	write(tmp, QwenLegacyFileName("4242"), fmt.Sprintf(`{"port":3006,"workspacePath":%q}`, ws2), 0)

	choose := func(cwd string, pid int, env map[string]string) *QwenChoice {
		t.Helper()
		ch, err := ChooseQwen(QwenChooseOptions{Dir: dir, TempDir: tmp, IDEPID: pid, Cwd: cwd, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	port := func(ch *QwenChoice) int {
		if ch.Chosen == nil {
			return 0
		}
		return ch.Chosen.Port
	}
	for _, tc := range []struct {
		name     string
		cwd      string
		pid      int
		env      map[string]string
		want     int
		rejected string
	}{
		{"newest live file of the folder", ws1, 0, nil, 3002, "[]"},
		{"the port variable first", ws1, 0, map[string]string{ide.EnvQwenServerPort: "3001"}, 3001, "[]"},
		{"a port variable that is not digits is ignored", ws1, 0, map[string]string{ide.EnvQwenServerPort: "3001x"}, 3002, "[]"},
		{"the port variable's file for another folder", ws2, 0, map[string]string{ide.EnvQwenServerPort: "3001"}, 3004, "[3001 3002]"},
		{"the legacy file of the editor pid", ws2, 4242, nil, 3006, "[]"},
		{"the legacy file of another folder", ws1, 4242, nil, 3002, "[3006]"},
		{"none", other, 0, nil, 0, "[3002 3001 3004]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := choose(tc.cwd, tc.pid, tc.env)
			if got := port(ch); got != tc.want {
				t.Errorf("chose %d (%s), want %d", got, ch.Reason, tc.want)
			}
			if got := fmt.Sprint(ch.Rejected); got != tc.rejected {
				t.Errorf("rejected %v, want %s", ch.Rejected, tc.rejected)
			}
		})
	}
	ch := choose(ws1, 0, nil)
	var order []int
	for _, c := range ch.Candidates {
		order = append(order, c.Port)
		if (c.Port == 3003) != (c.Stale != "") {
			t.Errorf("%s: stale %q", c.Name, c.Stale)
		}
	}
	if fmt.Sprint(order) != "[3005 3003 3002 3001 3004]" {
		t.Errorf("order %v, want newest first", order)
	}
	if _, err := os.Stat(filepath.Join(dir, "3003.lock")); err != nil {
		t.Errorf("ChooseQwen removed a stale file: %v", err)
	}
}
