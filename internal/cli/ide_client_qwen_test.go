package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestIDEClientAsQwen: status, doctor and check with --as qwen find the
// companion as Qwen Code does, through the lock file `gemkit ide serve`
// writes for it, and say what Qwen Code would do: the file it picks and
// why, a stale lock it would delete, IDE mode off in its settings, an
// approval mode that applies edits without a diff, its own words from
// outside the workspace; check passes every check as Qwen
// Code (protocol 2025-11-25).
func TestIDEClientAsQwen(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	ctx := context.Background()
	port := e.editor.Ready.Port
	qwenDir := filepath.Join(e.tmp, "qwen")
	lock := filepath.Join(qwenDir, "ide", strconv.Itoa(port)+".lock")

	code, out, errOut := e.client.run(ctx, "", "ide", "status", "--as", "qwen", "--json")
	if code != 0 {
		t.Fatalf("status exit %d: %s %s", code, out, errOut)
	}
	var st struct {
		Agent, Dir, Chosen string
		Files              []struct {
			Name, Source string
			PPID         int
			Alive        bool
		}
		Connect struct {
			OK, Diffing bool
			Server      struct{ ProtocolVersion string }
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status json: %v\n%s", err, out)
	}
	if st.Agent != "qwen" || st.Dir != filepath.Dir(lock) || st.Chosen != filepath.Base(lock) || len(st.Files) != 1 ||
		st.Files[0].Source != "scan" || st.Files[0].PPID == 0 || !st.Files[0].Alive || !st.Connect.OK || !st.Connect.Diffing {
		t.Errorf("status --as qwen %+v\n%s", st, out)
	}
	if _, out, _ := e.client.run(ctx, "", "ide", "status", "--as", "qwen"); !strings.Contains(out, "Editor as Qwen Code sees it: gemkit") ||
		!strings.Contains(out, "the newest lock file in "+filepath.Dir(lock)) {
		t.Errorf("status text:\n%s", out)
	}

	code, out, _ = e.client.run(ctx, "", "ide", "check", "--as", "qwen")
	if code != 0 || !strings.Contains(out, "A lock file Qwen Code would pick") || !strings.Contains(out, ", 0 failed") {
		t.Errorf("check --as qwen exit %d:\n%s", code, out)
	}

	// A lock of an ended companion and IDE mode off in Qwen Code's
	// settings.
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(qwenDir, "ide", "1.lock"), []byte(fmt.Sprintf(`{"port":1,"ppid":%d,"workspacePath":%q}`, ended.Process.Pid, e.ws)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(qwenDir, "settings.json"), []byte(`{"ide":{"enabled":false}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = e.client.run(ctx, "", "ide", "doctor", "--as", "qwen")
	for _, want := range []string{"1.lock: Qwen Code deletes this file the next time it looks: its ppid", "IDE mode is off in Qwen Code's settings",
		`starts in approval mode "auto", so it applies its edits without asking`, "type /approval-mode default in Qwen Code", "Qwen Code would connect from here."} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor --as qwen (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	// Approval mode "default": Qwen Code asks, and its edits open as diffs.
	if err := os.WriteFile(filepath.Join(qwenDir, "settings.json"), []byte(`{"ide":{"enabled":true},"tools":{"approvalMode":"default"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ = e.client.run(ctx, "", "ide", "doctor", "--as", "qwen"); code != 0 || strings.Contains(out, "approval mode") || strings.Contains(out, "IDE mode is off") {
		t.Errorf("doctor --as qwen with IDE mode on and approval mode default (exit %d):\n%s", code, out)
	}

	// From outside the workspace: the folders to use, and Qwen Code's
	// own words (with no lock file for the folder it knows no editor).
	e.client.chdir(t.TempDir())
	code, out, _ = e.client.run(ctx, "", "ide", "doctor", "--as", "qwen")
	if code != ExitNo || !strings.Contains(out, "run Qwen Code from one of: "+e.ws) || !strings.Contains(out, "run Qwen Code in one of these supported IDEs") {
		t.Errorf("doctor --as qwen outside exit %d:\n%s", code, out)
	}

	if code, _, errOut := e.client.run(ctx, "", "ide", "status", "--as", "claude"); code != ExitError || !strings.Contains(errOut, "--as must be gemini or qwen") {
		t.Errorf("--as claude: exit %d %s", code, errOut)
	}
}
