package client

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	mk := func(p string) string {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
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

	type tc struct {
		TMPDIR  string `json:"tmpdir"`
		PID     int    `json:"pid"`
		Cwd     string `json:"cwd"`
		EnvPort string `json:"envPort,omitempty"`
	}
	cases := []tc{
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
	in, _ := json.Marshal(cases)
	cmd := exec.Command(node, filepath.Join(gemkittest.RepoRoot(t), "interop", "choose-parity.mjs"))
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
	var real []struct {
		Port          any     `json:"port"`
		WorkspacePath *string `json:"workspacePath"`
		Valid         bool    `json:"valid"`
		Error         *string `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &real); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
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
			port = json.RawMessage(ch.Chosen.Config.Raw["port"])
			wp = ch.Chosen.Config.WorkspacePath
		}
		gotPort, _ := json.Marshal(port)
		wantPort, _ := json.Marshal(real[i].Port)
		t.Logf("case %d: port %s", i, wantPort)
		if string(gotPort) != string(wantPort) {
			t.Errorf("case %d %+v: we chose port %s, the real CLI %s", i, c, gotPort, wantPort)
			continue
		}
		err := discovery.ValidateWorkspace(wp, c.Cwd)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		wantErr := ""
		if real[i].Error != nil {
			wantErr = *real[i].Error
		}
		if gotErr != wantErr || (err == nil) != real[i].Valid {
			t.Errorf("case %d %+v: workspace check\n ours: %q\n real: %q", i, c, gotErr, wantErr)
		}
	}
}
