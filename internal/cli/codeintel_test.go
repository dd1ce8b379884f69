package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/workspaceintel"
)

// codeIntelApp is an app whose code intelligence runs gopls in the test
// process (no broker: the test binary is not gemkit), on the Go shop,
// with a config folder of its own.
func codeIntelApp(t *testing.T) (*app, string) {
	t.Helper()
	codeinteltest.Gopls(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ws := codeinteltest.Fixture(t, "go")
	a := newApp(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	t.Cleanup(a.closeCodeIntel)
	return a, ws
}

// Claude Code's getDiagnostics, for a front-end without diagnostics of
// its own, comes from gopls: LSP's positions, as Claude Code reads them;
// a file no server serves has none, and Serves says so.
func TestOwnDiagnostics(t *testing.T) {
	a, ws := codeIntelApp(t)
	main := filepath.Join(ws, "main.go")
	b, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(b), "s.Total()", "s.Totl()", 1)), 0o644)
	d := workspaceintel.NewDiagnostics([]string{ws}, a.codeIntelConfig("", false))
	t.Cleanup(d.Close)
	files, err := d.Diagnostics(context.Background(), main)
	if err != nil || len(files) != 1 || len(files[0].Diagnostics) != 1 {
		t.Fatalf("%+v %v", files, err)
	}
	dg := files[0].Diagnostics[0]
	if dg.Severity != codeintel.SevError || !strings.Contains(dg.Message, "s.Totl undefined") || dg.Range.Start.Line != 14 || dg.Range.Start.Character != 37 {
		t.Errorf("diagnostic: %+v", dg)
	}
	notes := filepath.Join(ws, "notes.txt")
	os.WriteFile(notes, []byte("x"), 0o644)
	if files, err := d.Diagnostics(context.Background(), notes); err != nil || len(files) != 0 {
		t.Errorf("a file no server serves: %+v %v", files, err)
	}
	if files, err := d.Diagnostics(context.Background(), "/elsewhere/x.go"); err != nil || len(files) != 0 {
		t.Errorf("a file outside the workspace: %+v %v", files, err)
	}
	// Whether gopls would answer, told without starting anything.
	for path, want := range map[string]bool{main: true, notes: false, "/elsewhere/x.go": false} {
		if got := d.Serves(path); got != want {
			t.Errorf("Serves(%s) = %v, want %v", path, got, want)
		}
	}
}

// The Gemini CLI hook reads what write_file and replace report (shapes
// from gemini-cli 0.61.0 packages/core/src/tools/write-file.ts and
// edit.ts) and answers with the problems the edit brought, or nothing.
func TestAfterEditHook(t *testing.T) {
	a, ws := codeIntelApp(t)
	g := filepath.Join(ws, "greet", "greet.go")
	b, _ := os.ReadFile(g)
	old := string(b)
	edited := strings.Replace(old, "func Greet(name string) string {", "func Greet(name, lang string) string {", 1)
	os.WriteFile(g, []byte(edited), 0o644)
	in := func(tool string, display any, errv any) geminiHookInput {
		raw, _ := json.Marshal(map[string]any{
			"hook_event_name": "AfterTool", "cwd": ws, "tool_name": tool,
			"tool_input":    map[string]any{"file_path": g, "content": edited},
			"tool_response": map[string]any{"llmContent": "Successfully overwrote file", "returnDisplay": display, "error": errv},
		})
		var h geminiHookInput
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	diff := map[string]any{"fileDiff": "…", "fileName": "greet.go", "filePath": g, "originalContent": old, "newContent": edited, "isNewFile": false}
	got := a.afterEditHook(context.Background(), in("write_file", diff, nil), "")
	if !strings.HasPrefix(got, "gopls reports 1 new problem after this edit of greet/greet.go:\nmain.go:15:33: error: not enough arguments in call to greet.Greet") {
		t.Errorf("write_file:\n%s", got)
	}
	for name, h := range map[string]geminiHookInput{
		"another tool":    in("read_file", diff, nil),
		"a failed write":  in("write_file", "Error writing file", map[string]any{"message": "EACCES", "type": "file_write_failure"}),
		"another event":   func() geminiHookInput { h := in("write_file", diff, nil); h.HookEventName = "BeforeTool"; return h }(),
		"nothing changed": in("replace", map[string]any{"filePath": g, "originalContent": edited, "newContent": edited}, nil),
	} {
		if got := a.afterEditHook(context.Background(), h, ""); got != "" {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// The hook command prints nothing, on stdout or stderr, for a file no
// language server serves: Gemini CLI would show stderr to the person.
func TestHookCommandQuiet(t *testing.T) {
	bin := gemkittest.Gemkit(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("x\n"), 0o644)
	in, _ := json.Marshal(map[string]any{"hook_event_name": "AfterTool", "cwd": ws, "tool_name": "write_file",
		"tool_input":    map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "x\n"},
		"tool_response": map[string]any{"returnDisplay": map[string]any{"filePath": filepath.Join(ws, "notes.txt"), "originalContent": "", "isNewFile": true}}})
	cmd := exec.Command(bin, "codeintel", "hook")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("err %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
	if b := codeinteltest.Brokers(ws); len(b) != 0 {
		t.Errorf("a broker was started for a text file: %v", b)
	}
	cmd = exec.Command(bin, "codeintel", "hook")
	cmd.Stdin = strings.NewReader("not json")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "the hook's input is not Gemini CLI's hook JSON") {
		t.Errorf("bad input: %v %s", err, out)
	}
	cmd = exec.Command(bin, "codeintel", "hook", "--timeout", "0s")
	cmd.Stdin = bytes.NewReader(in)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--timeout must be positive") {
		t.Errorf("--timeout 0s: %v %s", err, out)
	}
}

func TestCodeIntelServersAndStatus(t *testing.T) {
	bin := gemkittest.Gemkit(t)
	cfgHome := t.TempDir()
	os.MkdirAll(filepath.Join(cfgHome, "gemkit"), 0o755)
	os.WriteFile(filepath.Join(cfgHome, "gemkit", "config.json"), []byte(`{"codeIntel": {"languageServers": [{"name": "zls", "language": "Zig", "extensions": {".zig": "zig"}, "command": ["zls-not-installed"], "install": "see ziglang.org"}]}}`), 0o600)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+cfgHome)
	cmd := exec.Command(bin, "codeintel", "servers")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "zls") || !strings.Contains(string(out), "no: see ziglang.org") || !strings.Contains(string(out), "gopls") {
		t.Fatalf("servers: %v\n%s", err, out)
	}
	ws := t.TempDir()
	// A program only in the workspace's node_modules/.bin is listed as
	// not installed, as the tools answer (gemkit starts no server there).
	planted := filepath.Join(ws, "node_modules", ".bin")
	os.MkdirAll(planted, 0o755)
	os.WriteFile(filepath.Join(planted, "zls-not-installed"), []byte("#!/bin/sh\n"), 0o755)
	cmd = exec.Command(bin, "codeintel", "servers")
	cmd.Env, cmd.Dir = append(env, "PATH="+planted+":"+os.Getenv("PATH")), ws
	out, err = cmd.CombinedOutput()
	if want := "no (not " + filepath.Join(planted, "zls-not-installed") + ": in the workspace or a virtualenv): see ziglang.org"; err != nil || !strings.Contains(string(out), want) {
		t.Errorf("servers, with the workspace's node_modules/.bin on PATH: %v\n%s\nwant %q in it", err, out, want)
	}
	cmd = exec.Command(bin, "codeintel", "status", "--workspace", ws)
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No code intelligence broker runs for") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(cfgHome, "gemkit", "config.json"), []byte(`{"codeIntel": {"idleTimeout": "soon"}}`), 0o600)
	cmd = exec.Command(bin, "codeintel", "servers")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `codeIntel: idleTimeout "soon": use a positive Go duration`) {
		t.Errorf("bad config: %v %s", err, out)
	}
}

// rust-analyzer on PATH that is rustup's proxy is listed as installed
// only when rustup's toolchain has the component; otherwise the listing
// says to add it.
func TestCodeIntelServersRustupProxy(t *testing.T) {
	const toolchain = "stable-x86_64-unknown-linux-gnu"
	for _, c := range []struct {
		name      string
		component bool
	}{{"no component", false}, {"component", true}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			bin, rustupHome, ws := filepath.Join(root, "cargo", "bin"), filepath.Join(root, "rustup"), filepath.Join(root, "ws")
			tcBin := filepath.Join(rustupHome, "toolchains", toolchain, "bin")
			for _, d := range []string{bin, tcBin, ws} {
				os.MkdirAll(d, 0o755)
			}
			os.WriteFile(filepath.Join(bin, "rustup"), []byte("#!/bin/sh\nexit 1\n"), 0o755)
			proxy := filepath.Join(bin, "rust-analyzer")
			if err := os.Symlink("rustup", proxy); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(rustupHome, "settings.toml"), []byte(`default_toolchain = "`+toolchain+`"`+"\n"), 0o644)
			if c.component {
				os.WriteFile(filepath.Join(tcBin, "rust-analyzer"), []byte("#!/bin/sh\n"), 0o755)
			}
			t.Setenv("PATH", bin)
			t.Setenv("HOME", root)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
			t.Setenv("RUSTUP_HOME", rustupHome)
			t.Setenv("RUSTUP_TOOLCHAIN", "")
			t.Chdir(ws)
			var out, errb bytes.Buffer
			if code := Run(context.Background(), []string{"codeintel", "servers", "--json"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var rows []struct{ Name, Found, Missing, Install string }
			if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
				t.Fatal(err)
			}
			want := struct{ Name, Found, Missing, Install string }{Name: "rust-analyzer", Install: "rustup component add rust-analyzer",
				Missing: proxy + " is only rustup's proxy: rustup's toolchain " + toolchain + " has no rust-analyzer component"}
			if c.component {
				want.Found, want.Missing = proxy, ""
			}
			i := slices.IndexFunc(rows, func(r struct{ Name, Found, Missing, Install string }) bool { return r.Name == "rust-analyzer" })
			if i < 0 || rows[i] != want {
				t.Errorf("got %+v\nwant %+v", rows, want)
			}
			// The companion's diagnostics count on gemkit's servers
			// for a Rust file only where rust-analyzer would start.
			a := newApp(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
			d := workspaceintel.NewDiagnostics([]string{ws}, a.codeIntelConfig("", false))
			defer d.Close()
			if got := d.Serves(filepath.Join(ws, "src", "main.rs")); got != c.component {
				t.Errorf("Serves(src/main.rs) = %v, want %v", got, c.component)
			}
		})
	}
}
