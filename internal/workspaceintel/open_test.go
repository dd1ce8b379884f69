package workspaceintel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

// testConfig is a Config with a config file of the test's own.
func testConfig(t *testing.T) Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return Config{ConfigPath: path, Version: "test"}
}

// Without gemkit's own binary, the servers run in this process: the
// tools answer from the real gopls, and a question about a file no
// server serves says so.
func TestWorkspaceInProcess(t *testing.T) {
	codeinteltest.Gopls(t)
	ws := codeinteltest.Fixture(t, "go")
	in, err := Workspace(ws, testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Finder != nil {
		t.Error("an editor is looked for without Config.Editor")
	}
	got, isErr := in.Tools.Call(context.Background(), codeintel.ToolDefinition, json.RawMessage(`{"symbol":"Greet","file":"main.go"}`))
	if isErr || !strings.Contains(got, "greet/greet.go:16:6: func Greet(name string) string {") {
		t.Errorf("definition (error %v):\n%s", isErr, got)
	}
	os.WriteFile(filepath.Join(ws, "notes.zig"), []byte("const x = 1;\n"), 0o644)
	got, isErr = in.Tools.Call(context.Background(), codeintel.ToolSymbols, json.RawMessage(`{"file":"notes.zig"}`))
	if !isErr || !strings.Contains(got, "gemkit knows no language server for .zig files") {
		t.Errorf("a file no server serves (error %v): %s", isErr, got)
	}
}

// The broker's socket is one per workspace, config and version.
func TestBrokerSocket(t *testing.T) {
	cfg := testConfig(t)
	ws := t.TempDir()
	a, err := BrokerSocket(ws, cfg.ConfigPath, "1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := BrokerSocket(ws, cfg.ConfigPath, "1")
	c, _ := BrokerSocket(ws, cfg.ConfigPath, "2")
	d, _ := BrokerSocket(t.TempDir(), cfg.ConfigPath, "1")
	if a != b || a == c || a == d || !strings.HasSuffix(a, ".sock") {
		t.Errorf("sockets %s %s %s %s", a, b, c, d)
	}
}

// The companion's own diagnostics answer for the workspace's files only.
func TestDiagnosticsOutside(t *testing.T) {
	d := NewDiagnostics([]string{t.TempDir()}, testConfig(t))
	defer d.Close()
	files, err := d.Diagnostics(context.Background(), "/elsewhere/x.go")
	if err != nil || len(files) != 0 || files == nil {
		t.Errorf("%+v %v", files, err)
	}
}
