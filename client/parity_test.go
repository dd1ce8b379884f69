package client

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestChoiceParityWithRealCLI puts discovery files on disk and asks both
// the real CLI's code (interop/choose-parity.mjs) and ours which one
// each case picks and what the workspace check says: same file, same
// words.
func TestChoiceParityWithRealCLI(t *testing.T) {
	node, _ := stdioCompanion(t) // checks node and interop/node_modules
	root := t.TempDir()
	dir := filepath.Join(root, "gemini", "ide")
	mk := func(p string) string { return mkdirAll(t, p) }
	mk(dir)
	ws1, ws2 := mk(filepath.Join(root, "ws1")), mk(filepath.Join(root, "ws2"))
	sub := mk(filepath.Join(ws1, "deep", "er"))
	link := filepath.Join(root, "link-to-ws2")
	if err := os.Symlink(ws2, link); err != nil {
		t.Fatal(err)
	}
	outside := mk(filepath.Join(root, "outside"))
	me, dead := os.Getpid(), 99999990
	write := func(name, content string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(discovery.FileName(dead+5, 3001), fmt.Sprintf(`{"port":3001,"workspacePath":%q}`, ws1), 0o600)
	write(discovery.FileName(me, 3002), fmt.Sprintf(`{"port":3002,"workspacePath":%q}`, ws1+string(os.PathListSeparator)+link), 0o600)
	write(discovery.FileName(dead, 3003), fmt.Sprintf(`{"port":3003,"workspacePath":%q}`, ws2), 0o600)
	write(discovery.FileName(dead+9, 3004), `{"port":3004,"workspacePath":""}`, 0o600)
	write(discovery.FileName(dead+7, 3005), `not json`, 0o600)
	write(discovery.FileName(dead+8, 3006), `{"port":"3006"}`, 0o600)
	write(discovery.LegacyFileName(4242), fmt.Sprintf(`{"port":3007,"workspacePath":%q}`, outside), 0o600)
	write(discovery.FileName(dead+3, 3008), fmt.Sprintf(`{"port":3008,"workspacePath":%q}`, ws2), 0o600)
	if os.Getuid() == 0 {
		write(discovery.FileName(dead+20, 3009), fmt.Sprintf(`{"port":3009,"workspacePath":%q}`, ws1), 0o600)
		if err := os.Chown(filepath.Join(dir, discovery.FileName(dead+20, 3009)), 4321, 4321); err != nil {
			t.Fatal(err)
		}
	}

	cases := []geminiParityCase{
		{root, 1, sub, ""},        // several valid: alive first
		{root, dead + 5, ws1, ""}, // pid match first
		{root, 1, ws1, "3001"},    // env port tie-break
		{root, 1, ws2, ""},        // through a symlinked folder, dead pids by size
		{root, 1, link, "3008"},   // cwd through the symlink, env port
		{root, 1, outside, ""},    // none valid: best sorted, mismatch words
		{root, 1, outside, "3004"},
		{root, 4242, ws1, ""}, // legacy first
		{root, dead + 9, outside, ""},
		{filepath.Join(root, "empty"), 1, ws1, ""}, // no directory
	}
	line := runParity(t, node, filepath.Join(gemkittest.RepoRoot(t), "interop", "choose-parity.mjs"), cases)
	var real []geminiParityResult
	if err := json.Unmarshal([]byte(line), &real); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		checkGeminiChoice(t, i, c, real[i])
	}
}

// TestQwenChoiceParityWithRealCLI puts Qwen Code lock files (and a legacy
// file) on disk and asks both Qwen Code's own IdeClient
// (interop/qwen-choose-parity.mjs, @qwen-code/qwen-code 0.24.4) and
// discovery.ChooseQwen which file each case picks, which ports it turns
// away for their workspace, and what the workspace check says; then that
// the files Qwen Code deleted as stale are exactly those we marked.
func TestQwenChoiceParityWithRealCLI(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@qwen-code/qwen-code")
	root := t.TempDir()
	mk := func(p string) string { return mkdirAll(t, p) }
	home, tmp := mk(filepath.Join(root, "qwen")), mk(filepath.Join(root, "tmp"))
	dir := mk(filepath.Join(home, "ide"))
	ws1, ws2, outside := mk(filepath.Join(root, "ws1")), mk(filepath.Join(root, "ws2")), mk(filepath.Join(root, "outside"))
	sub := mk(filepath.Join(ws1, "deep"))
	link := filepath.Join(root, "link-to-ws2")
	if err := os.Symlink(ws2, link); err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	dead := ended.Process.Pid
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
	write(dir, "3001.lock", fmt.Sprintf(`{"port":3001,"workspacePath":%q,"ppid":%d}`, ws1, me), 5*time.Minute)
	write(dir, "3002.lock", fmt.Sprintf(`{"port":3002,"workspacePath":%q,"ppid":%d}`, ws1+string(os.PathListSeparator)+link, me), 4*time.Minute)
	write(dir, "3003.lock", fmt.Sprintf(`{"port":3003,"workspacePath":%q,"ppid":%d}`, ws1, dead), time.Minute)
	js, _ := json.Marshal([]string{ws2})
	write(dir, "3004.lock", fmt.Sprintf(`{"port":3004,"workspacePath":%q,"ppid":%d}`, js, me), 3*time.Minute)
	write(dir, "3005.lock", `{"port":3005,"workspacePath":"/nowhere/at/all"}`, 2*time.Minute)
	write(dir, "3006.lock", fmt.Sprintf(`{"port":3006,"ppid":%d}`, me), 0)
	write(dir, "3007.lock", `not json`, 0)
	write(tmp, discovery.QwenLegacyFileName("4242"), fmt.Sprintf(`{"port":3008,"workspacePath":%q}`, outside), 0)

	cases := []qwenParityCase{
		{home, tmp, 0, sub, ""},        // newest live file holding the cwd
		{home, tmp, 0, ws1, "3001"},    // the port variable's file
		{home, tmp, 0, ws2, "3001"},    // the port variable's file is for another folder
		{home, tmp, 0, link, ""},       // through a symlink; a JSON array workspace
		{home, tmp, 4242, outside, ""}, // the legacy file of the editor pid
		{home, tmp, 4242, ws1, ""},     // the legacy file for another folder
		{home, tmp, 0, outside, ""},    // none
		{home, tmp, 0, ws1, "70000"},   // not a port
		{filepath.Join(root, "none"), tmp, 0, ws1, ""},
	}
	ours, stale := chooseQwenCases(t, cases)

	line := runParity(t, node, filepath.Join(interop, "qwen-choose-parity.mjs"), cases)
	var real []qwenParityResult
	if err := json.Unmarshal([]byte(line), &real); err != nil {
		t.Fatal(err)
	}
	show := func(r qwenParityResult) string {
		b, _ := json.Marshal(r)
		return strings.ReplaceAll(string(b), `"rejected":null`, `"rejected":[]`)
	}
	for i, c := range cases {
		t.Logf("case %d: %s", i, show(real[i]))
		if got, want := show(ours[i]), show(real[i]); got != want {
			t.Errorf("case %d %+v:\n ours %s\n real %s", i, c, got, want)
		}
	}
	if len(stale) != 2 || !stale["3003.lock"] || !stale["3005.lock"] {
		t.Errorf("we marked %v stale", stale)
	}
	for _, name := range []string{"3001.lock", "3002.lock", "3003.lock", "3004.lock", "3005.lock", "3006.lock", "3007.lock"} {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := err != nil; gone != stale[name] {
			t.Errorf("%s: Qwen Code deleted it: %v; we marked it stale: %v", name, gone, stale[name])
		}
	}
}

// geminiParityCase is one question put to both choosers: the temp
// folder that holds gemini/ide, the IDE's pid, the working directory
// and GEMINI_CLI_IDE_SERVER_PORT.
type geminiParityCase struct {
	TMPDIR  string `json:"tmpdir"`
	PID     int    `json:"pid"`
	Cwd     string `json:"cwd"`
	EnvPort string `json:"envPort,omitempty"`
}

// geminiParityResult is what interop/choose-parity.mjs reports the real
// CLI chose for a case.
type geminiParityResult struct {
	Port          any     `json:"port"`
	WorkspacePath *string `json:"workspacePath"`
	Valid         bool    `json:"valid"`
	Error         *string `json:"error"`
}

// qwenParityCase is one question put to both of Qwen Code's choosers.
type qwenParityCase struct {
	QwenHome string `json:"qwenHome"`
	TMPDIR   string `json:"tmpdir"`
	PID      int    `json:"pid"`
	Cwd      string `json:"cwd"`
	EnvPort  string `json:"envPort,omitempty"`
}

// qwenParityResult is a choice in the shape both sides print it, so the
// two compare as JSON.
type qwenParityResult struct {
	Port     *int    `json:"port"`
	Rejected []int   `json:"rejected"`
	Error    *string `json:"error"`
}

// mkdirAll makes the folder p for a fixture and returns it.
func mkdirAll(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runParity hands the cases as JSON to a node script that runs the real
// CLI's chooser and returns the JSON it prints after "PARITY ".
func runParity(t *testing.T, node, script string, cases any) string {
	t.Helper()
	in, _ := json.Marshal(cases)
	cmd := exec.Command(node, script)
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "PARITY ")
	if !ok {
		t.Fatalf("no result: %s\n%s", out, stderr.String())
	}
	return line
}

// checkGeminiChoice asks our chooser case c and compares its port and
// its workspace check's words with the real CLI's.
func checkGeminiChoice(t *testing.T, i int, c geminiParityCase, real geminiParityResult) {
	t.Helper()
	ch, _ := discovery.Choose(discovery.ChooseOptions{Dir: filepath.Join(c.TMPDIR, "gemini", "ide"), IDEPID: c.PID, Cwd: c.Cwd,
		Getenv: func(k string) string {
			if k == "GEMINI_CLI_IDE_SERVER_PORT" {
				return c.EnvPort
			}
			return ""
		}})
	var port any
	var wp *string
	if ch != nil && ch.Chosen != nil {
		port = json.RawMessage(ch.Chosen.Contents.Raw["port"])
		wp = ch.Chosen.Contents.WorkspacePath
	}
	gotPort, _ := json.Marshal(port)
	wantPort, _ := json.Marshal(real.Port)
	t.Logf("case %d: port %s", i, wantPort)
	if string(gotPort) != string(wantPort) {
		t.Errorf("case %d %+v: we chose port %s, the real CLI %s", i, c, gotPort, wantPort)
		return
	}
	err := discovery.ValidateWorkspace(wp, c.Cwd)
	gotErr := ""
	if err != nil {
		gotErr = err.Error()
	}
	wantErr := ""
	if real.Error != nil {
		wantErr = *real.Error
	}
	if gotErr != wantErr || (err == nil) != real.Valid {
		t.Errorf("case %d %+v: workspace check\n ours: %q\n real: %q", i, c, gotErr, wantErr)
	}
}

// chooseQwenCases asks our Qwen Code chooser every case and returns its
// choices in the shape the real one prints, and the names of the files
// it marked stale.
func chooseQwenCases(t *testing.T, cases []qwenParityCase) ([]qwenParityResult, map[string]bool) {
	t.Helper()
	var ours []qwenParityResult
	stale := map[string]bool{}
	for _, c := range cases {
		ch, err := discovery.ChooseQwen(discovery.QwenChooseOptions{Dir: filepath.Join(c.QwenHome, "ide"), TempDir: c.TMPDIR, IDEPID: c.PID, Cwd: c.Cwd,
			Getenv: func(k string) string {
				if k == "QWEN_CODE_IDE_SERVER_PORT" {
					return c.EnvPort
				}
				return ""
			}})
		if err != nil {
			t.Fatal(err)
		}
		r := qwenParityResult{Rejected: ch.Rejected}
		if ch.Chosen != nil {
			p := ch.Chosen.Port
			r.Port = &p
			if wp := ch.Chosen.Contents.WorkspacePath; wp != nil {
				if err := discovery.ValidateQwenWorkspace(wp, c.Cwd); err != nil {
					s := err.Error()
					r.Error = &s
				}
			}
		}
		for _, cand := range ch.Candidates {
			if cand.Stale != "" {
				stale[cand.Name] = true
			}
		}
		ours = append(ours, r)
	}
	return ours, stale
}
