package claudetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// APIKey is the key the CLI is given: any well-formed key works against
// the scripted model, and the home marks its last 20 characters approved.
const APIKey = "sk-ant-api03-gemkit-test-key-0000000000000000000000000000"

// Binary returns the pinned Claude Code executable from interop/node_modules.
func Binary(t testing.TB) string {
	t.Helper()
	_, dir := gemkittest.Interop(t, "@anthropic-ai/claude-code")
	// The package's postinstall puts the native binary of the platform
	// package at bin/claude.exe; when install scripts did not run, the
	// platform package still holds it.
	for _, bin := range []string{
		filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe"),
		filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+goarch(), "claude"),
	} {
		if fi, err := os.Stat(bin); err == nil && fi.Size() > 1<<20 {
			return bin
		}
	}
	t.Fatalf("no native Claude Code binary in interop/node_modules/@anthropic-ai (claude-code/bin/claude.exe or the platform package claude-code-%s-%s): run `npm install --no-save` in interop/", runtime.GOOS, goarch())
	return ""
}

// Home makes a private home in which the CLI starts in dirs with no
// onboarding, API-key or trust prompt, and returns the environment that
// runs it offline against model (see Prepare).
func Home(t testing.TB, home string, model *Model, closedPort int, dirs ...string) []string {
	t.Helper()
	env, err := Prepare(home, model.URL, closedPort, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code gives an MCP server 30 s to connect (MCP_TIMEOUT), and
	// by default sends the first prompt without waiting for those still
	// connecting (MCP_CONNECTION_NONBLOCKING), or waits 5 s at most
	// (MCP_CONNECT_TIMEOUT_MS); on a loaded 2-core CI machine gemkit
	// mcp's tools were then never found. A test waits for the
	// connection, however long it takes.
	return append(env, "MCP_CONNECTION_NONBLOCKING=false", "MCP_TIMEOUT=600000", "MCP_CONNECT_TIMEOUT_MS=600000")
}

// Prepare writes the home of Home for a model served at modelURL (the
// benchmarks use it too) and returns the environment that runs the CLI
// offline: no request leaves the machine (the non-essential traffic is
// off and every other host goes to closedPort, a closed loopback port).
func Prepare(home, modelURL string, closedPort int, dirs ...string) ([]string, error) {
	projects := map[string]any{}
	for _, d := range dirs {
		projects[d] = map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": []string{}}
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{APIKey[len(APIKey)-20:]}, "rejected": []string{}},
		"projects":               projects,
		"autoUpdates":            false,
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	dir := filepath.Join(home, ide.AgentClaude.HomeDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The CLI reads ~/.claude.json, or .claude.json in CLAUDE_CONFIG_DIR
	// when that is set: both hold the same.
	for _, p := range []string{filepath.Join(home, ".claude.json"), filepath.Join(dir, ".claude.json")} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return nil, err
		}
	}
	// Permission prompts (not "auto" mode) are what show a proposed
	// change as a diff in the IDE.
	settings := []byte(`{"permissions": {"defaultMode": "default"}, "autoUpdates": false}`)
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), settings, 0o600); err != nil {
		return nil, err
	}
	proxy := "http://127.0.0.1:" + itoa(closedPort)
	return []string{
		"HOME=" + home,
		ide.AgentClaude.HomeEnv + "=" + dir,
		"ANTHROPIC_BASE_URL=" + modelURL,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "https_proxy=" + proxy, "http_proxy=" + proxy,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"TERM=xterm-256color",
	}, nil
}

// goarch names the machine as the npm platform packages do.
func goarch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
