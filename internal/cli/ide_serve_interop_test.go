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
)

// repoRoot is the directory holding go.mod, found upwards from the test's
// working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// buildGemkit builds the gemkit binary into a temporary directory.
func buildGemkit(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gemkit")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gemkit")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestInteropRealClient drives `gemkit ide serve --editor stdio` with the
// real Gemini CLI client code (IdeClient from @google/gemini-cli-core),
// through interop/companion-interop.mjs, which acts as both the editor (on
// the child's stdin/stdout) and the CLI.
func TestInteropRealClient(t *testing.T) {
	root := repoRoot(t)
	interop := filepath.Join(root, "interop")
	if _, err := os.Stat(filepath.Join(interop, "node_modules", "@google", "gemini-cli-core", "package.json")); err != nil {
		t.Fatalf("interop/node_modules is missing @google/gemini-cli-core: run `npm ci` in interop/ first (%v)", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node (>= 20) is needed for the interop test: install Node.js; then run `npm ci` in interop/")
	}
	bin := buildGemkit(t, root)

	tmp := t.TempDir()
	workspace := filepath.Join(tmp, "workspace")
	home := filepath.Join(tmp, "home")
	for _, d := range []string{workspace, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "companion-interop.mjs", bin, workspace)
	cmd.Dir = interop
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GEMINI_CLI_IDE_") || strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "TMPDIR="+tmp, "HOME="+home, "NO_COLOR=1")
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
