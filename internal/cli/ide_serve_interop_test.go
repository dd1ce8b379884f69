package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestInteropRealClient drives `gemkit ide serve --editor stdio` with the
// real Gemini CLI client code (IdeClient from @google/gemini-cli-core),
// through interop/companion-interop.mjs, which acts as both the editor (on
// the child's stdin/stdout) and the CLI.
func TestInteropRealClient(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	bin := gemkittest.Gemkit(t)

	tmp := t.TempDir()
	workspace := filepath.Join(tmp, "workspace")
	home := filepath.Join(tmp, "home")
	for _, d := range []string{workspace, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The script bounds its own run at 4 minutes, generous for a loaded
	// machine; this bound is past it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "companion-interop.mjs", bin, workspace)
	cmd.Dir = interop
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GEMINI_CLI_IDE_") || strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "TMPDIR="+tmp, "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var result struct {
		OK     bool `json:"ok"`
		Checks []struct {
			Name   string          `json:"name"`
			OK     bool            `json:"ok"`
			Detail json.RawMessage `json:"detail"`
		} `json:"checks"`
	}
	found := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "INTEROP-RESULT "); ok {
			if err := json.Unmarshal([]byte(line), &result); err != nil {
				t.Fatalf("bad result line: %v\n%s", err, line)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("the interop script printed no result (exit: %v)\nstdout:\n%s\nstderr:\n%s", runErr, stdout.String(), stderr.String())
	}
	for _, c := range result.Checks {
		if !c.OK {
			t.Errorf("interop check failed: %s: %s", c.Name, c.Detail)
		}
	}
	if !result.OK || runErr != nil {
		t.Fatalf("interop failed (exit: %v); script log:\n%s", runErr, stderr.String())
	}
	if len(result.Checks) < 30 {
		t.Fatalf("only %d checks ran", len(result.Checks))
	}
	t.Logf("%d interop checks passed with the real IdeClient", len(result.Checks))
}
