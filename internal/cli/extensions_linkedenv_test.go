package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// TestLinkedSettingsEnv: a linked extension's settings follow Gemini CLI
// 0.61's rule (getEnvFilePath: ~/.gemini/extensions/NAME/.env, the entry
// that records the link, and the workspace's .env in trusted folders),
// the same in describe, doctor and a switched server's environment: a
// value in the linked folder's own .env is read by none of them, and
// said so; one in the entry's .env reaches the server and describe says
// it is set; a workspace's value is Gemini CLI's alone, and describe says
// what the server gets instead.
func TestLinkedSettingsEnv(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "env-ext")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "env-ext", "version": "1.0.0",
 "settings": [{"name": "Region", "description": "Where.", "envVar": "REGION"}],
 "mcpServers": {"srv": {"command": "sh", "args": ["-c", "true"], "env": {"WHERE": "$REGION"}}}}`), 0o644)
	os.WriteFile(filepath.Join(src, ".env"), []byte("REGION=from-the-linked-folder\n"), 0o600)
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "env-ext")
	st := extension.OpenStore(e.home).WithWorkspace(e.ws)

	// serverEnv is the switched server's environment, as gemkit mcp
	// builds it.
	serverEnv := func() []string {
		t.Helper()
		set, err := disclosure.Load(st)
		if err != nil {
			t.Fatal(err)
		}
		specs, _ := extmcp.Specs(set, nil)
		if len(specs) != 1 {
			t.Fatalf("specs %+v", specs)
		}
		pr, err := extmcp.BuildProfile(specs[0], e.ws, filepath.Join(t.TempDir(), "data"), []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pr.Env
	}
	entryEnv := filepath.Join(e.home, ".gemini", "extensions", "env-ext", ".env")
	if out := e.describe("env-ext"); !strings.Contains(out, "not read: REGION in the linked folder's") || !strings.Contains(out, "not set; set it with `gemini extensions config env-ext REGION`") {
		t.Errorf("describe with the linked folder's .env only:\n%s", out)
	}
	if out := e.mustRun("doctor"); !strings.Contains(out, "the linked folder's .env gives REGION a value that neither Gemini CLI nor gemkit reads") {
		t.Errorf("doctor with the linked folder's .env only:\n%s", out)
	}
	if env := serverEnv(); slices.ContainsFunc(env, func(kv string) bool { return strings.Contains(kv, "from-the-linked-folder") }) || !slices.Contains(env, "WHERE=") {
		t.Errorf("the server's environment takes the linked folder's .env: %v", env)
	}

	if err := os.WriteFile(entryEnv, []byte("REGION=from-the-entry\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.describe("env-ext"); strings.Contains(out, "not read:") || !strings.Contains(out, "set (user scope, in $HOME/.gemini/extensions/env-ext/.env)") {
		t.Errorf("describe with the entry's .env:\n%s", out)
	}
	if out := e.mustRun("doctor"); strings.Contains(out, "REGION") {
		t.Errorf("doctor with the entry's .env:\n%s", out)
	}
	if env := serverEnv(); !slices.Contains(env, "REGION=from-the-entry") || !slices.Contains(env, "WHERE=from-the-entry") {
		t.Errorf("the server's environment lacks the entry's value: %v", env)
	}

	if err := os.WriteFile(filepath.Join(e.ws, ".env"), []byte("REGION=from-the-workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.describe("env-ext"); !strings.Contains(out, "set (workspace scope, in $WORKSPACE/.env)") ||
		!strings.Contains(out, "gemkit's tools and sandboxed servers get the extension's own value ($HOME/.gemini/extensions/env-ext/.env), not the workspace's") {
		t.Errorf("describe with the workspace's .env:\n%s", out)
	}
	if env := serverEnv(); !slices.Contains(env, "REGION=from-the-entry") {
		t.Errorf("the server's environment is not what describe says: %v", env)
	}
}
