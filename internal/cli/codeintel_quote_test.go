package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
	"github.com/gemkit/gemkit/internal/workspaceintel"
)

// leaked is the text of the fake home's credentials: no answer may carry
// it.
const leaked = "1//0gLEAKED-refresh-token"

// fakeHome is a home folder with Gemini CLI's OAuth token and Codex's
// (the files a tool asked the language servers to read), set as $HOME.
func fakeHome(t *testing.T) string {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, text := range map[string]string{
		".gemini/oauth_creds.json": "{\n  \"access_token\": \"ya29.x\",\n  \"refresh_token\": \"" + leaked + "\"\n}\n",
		".codex/auth.json":         "{\n  \"OPENAI_API_KEY\": null,\n  \"tokens\": {\n    \"refresh_token\": \"" + leaked + "\"\n  }\n}\n",
		// A Go module in the closed folder, as an extension's source
		// can be.
		".gemini/extensions/ext/go.mod": "module example.com/ext\n\ngo 1.22\n",
		".gemini/extensions/ext/ext.go": "package ext\n\n// Token is the extension's secret.\nconst Token = \"" + leaked + "\"\n",
	} {
		p = filepath.Join(home, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("GEMINI_CLI_HOME", "")
	// A loaded machine's cold server may take longer than a request's
	// default 20 s.
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "gemkit"), 0o700)
	os.WriteFile(filepath.Join(cfg, "gemkit", "config.json"), []byte(`{"codeIntel": {"requestTimeout": "2m"}}`), 0o600)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	return home
}

// warmUp asks for file's outline until its server answers (a cold one
// on a loaded machine may outlast a tool call's 30 s), for at most three
// minutes.
func warmUp(t *testing.T, tools *codeintel.Tools, file string) {
	t.Helper()
	var got string
	if !gemkittest.Poll(3*time.Minute, 100*time.Millisecond, func() bool {
		var isErr bool
		got, isErr = tools.Call(context.Background(), codeintel.ToolSymbols, json.RawMessage(`{"file":"`+file+`"}`))
		return !isErr
	}) {
		t.Fatalf("the server of %s did not answer: %s", file, got)
	}
}

// quoteApp is an app whose code intelligence runs the language servers
// in the test process (the test binary is not gemkit, so no broker).
func quoteApp(t *testing.T, ws string) *codeintel.Tools {
	t.Helper()
	a := newApp(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	// No editor: one running on this machine must not answer.
	in, err := workspaceintel.Workspace(ws, a.codeIntelConfig("", false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in.Tools
}

// askQuote runs a tool and fails the test when the answer carries the
// credential or lacks one of want (substrings, in order).
func askQuote(t *testing.T, tools *codeintel.Tools, tool, args string, want ...string) string {
	t.Helper()
	got, isErr := tools.Call(context.Background(), tool, json.RawMessage(args))
	if strings.Contains(got, leaked) {
		t.Fatalf("%s %s carries the credential:\n%s", tool, args, got)
	}
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s %s (isError %v) lacks (in order) %q:\n%s", tool, args, isErr, w, got)
		}
		rest = rest[i+len(w):]
	}
	return got
}

// askClosed asks about a name declared in a closed file. gemkit's own
// servers run in their sandbox profile, which closes the file, so they
// find no declaration there; a server that could read it (an editor's)
// has the answer name the file without its text (the codeintel package's
// tests hold that with a source of their own). Either way the credential
// never shows, and a closed file named in the answer is never quoted.
func askClosed(t *testing.T, tools *codeintel.Tools, tool, args, path string) {
	t.Helper()
	got := askQuote(t, tools, tool, args)
	if strings.Contains(got, path) && !strings.Contains(got, "[not quoted: a closed path") {
		t.Fatalf("%s %s names %s without saying it is not quoted:\n%s", tool, args, path, got)
	}
}

// TestAnswersNeverQuoteClosedTS reproduces the leak with the real
// typescript-language-server: a tool that may only write the workspace
// writes a tsconfig.json with resolveJsonModule and a .ts file importing
// ~/.gemini/oauth_creds.json and ~/.codex/auth.json by absolute path; the
// definition of refresh_token was then the token's line of the JSON
// file. Now the server cannot read the file and the answer never carries
// its text (askClosed); a definition in the workspace and one in
// TypeScript's own library (the server's installation) are still quoted.
func TestAnswersNeverQuoteClosedTS(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "typescript-language-server")
	t.Setenv("PATH", codeinteltest.PathWith(bin))
	home := fakeHome(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	gemini := filepath.Join(home, ".gemini", "oauth_creds.json")
	codex := filepath.Join(home, ".codex", "auth.json")
	writeFiles(t, ws, map[string]string{
		"tsconfig.json": `{"compilerOptions": {"module": "commonjs", "target": "es2022", "resolveJsonModule": true, "esModuleInterop": true, "strict": true}}`,
		"main.ts": "import creds from \"" + gemini + "\";\nimport auth from \"" + codex + "\";\n\n" +
			"export function tokens(): string[] {\n  return [creds.refresh_token, auth.tokens.refresh_token].map((s) => s.trim());\n}\n",
	})
	tools := quoteApp(t, ws)
	warmUp(t, tools, "main.ts")
	askClosed(t, tools, codeintel.ToolDefinition, `{"symbol":"refresh_token","file":"main.ts","line":5}`, gemini)
	askClosed(t, tools, codeintel.ToolDefinition, `{"file":"main.ts","line":5,"column":46}`, codex)
	askClosed(t, tools, codeintel.ToolReferences, `{"file":"main.ts","line":5,"column":18}`, gemini)
	askClosed(t, tools, codeintel.ToolHover, `{"file":"main.ts","line":5,"column":18}`, gemini)
	// Controls: the workspace, and TypeScript's library.
	askQuote(t, tools, codeintel.ToolDefinition, `{"symbol":"tokens"}`, "main.ts:4:17: export function tokens(): string[] {")
	askQuote(t, tools, codeintel.ToolDefinition, `{"symbol":"map","file":"main.ts","line":5}`, "lib.es5.d.ts:", ": map<U>(callbackfn", "[outside the workspace: npm package typescript]")
}

// TestAnswersNeverQuoteClosedGo is the same class with the real gopls: a
// go.mod that replaces a module by a folder in ~/.gemini (an extension's
// source) made the definition of its constant a line of that folder;
// now it is never quoted (askClosed). The controls: the standard library
// (GOROOT, a read root of gopls's profile) and the workspace are quoted.
func TestAnswersNeverQuoteClosedGo(t *testing.T) {
	codeinteltest.Gopls(t)
	if _, err := exec.LookPath("go"); err != nil {
		// The unprivileged re-run's PATH lacks the toolchain gopls needs
		// (and go env is asked for GOROOT): the one this test was built
		// with.
		t.Setenv("PATH", codeinteltest.PathWith(filepath.Join(runtime.GOROOT(), "bin")))
	}
	home := fakeHome(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	ext := filepath.Join(home, ".gemini", "extensions", "ext")
	writeFiles(t, ws, map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.22\n\nrequire example.com/ext v0.0.0\n\nreplace example.com/ext => " + ext + "\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/ext\"\n)\n\nfunc main() {\n\tfmt.Println(ext.Token)\n}\n",
	})
	tools := quoteApp(t, ws)
	warmUp(t, tools, "main.go")
	askClosed(t, tools, codeintel.ToolDefinition, `{"symbol":"Token","file":"main.go"}`, filepath.Join(ext, "ext.go"))
	askClosed(t, tools, codeintel.ToolHover, `{"symbol":"Token","file":"main.go"}`, filepath.Join(ext, "ext.go"))
	askQuote(t, tools, codeintel.ToolDefinition, `{"symbol":"Println","file":"main.go"}`, "print.go:", ": func Println(a ...any) (n int, err error) { [outside the workspace: the Go standard library]")
	askQuote(t, tools, codeintel.ToolDefinition, `{"symbol":"main"}`, "main.go:9:6: func main() {")
}

func TestAnswersNeverQuoteClosedUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestAnswersNeverQuoteClosed(TS|Go)$")
}

// TestRunnerClosesRuntimeDirs: the tool runner every command uses closes
// the code-intelligence broker folder this process would use, and the
// one of a process with another runtime or temporary folder.
func TestRunnerClosesRuntimeDirs(t *testing.T) {
	for _, env := range []struct{ rt, tmp string }{{"", ""}, {t.TempDir(), ""}, {"", t.TempDir()}} {
		t.Setenv("XDG_RUNTIME_DIR", env.rt)
		t.Setenv("TMPDIR", env.tmp)
		dir, err := gemkitdir.MakeRuntime()
		if err != nil {
			t.Fatal(err)
		}
		r := newRunner(extension.OpenStore(t.TempDir()), nil, nil, nil)
		if !slices.Contains(r.Protected, dir) {
			t.Errorf("XDG_RUNTIME_DIR=%q TMPDIR=%q: %s is not closed: %v", env.rt, env.tmp, dir, r.Protected)
		}
	}
}
