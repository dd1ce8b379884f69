package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// attack is the host's view of one attack on a language server: a
// marker the planted program tries to write outside the workspace, a
// secret it tries to read there, and the private cache where it may
// write what it saw.
type attack struct {
	outside, secret, cache string
}

func newAttack(t *testing.T) attack {
	t.Helper()
	host := t.TempDir()
	a := attack{outside: filepath.Join(host, "pwned"), secret: filepath.Join(host, "secret"), cache: t.TempDir()}
	if err := os.WriteFile(a.secret, []byte("the-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// nodeScript is a planted JavaScript file that tries both, then writes
// what happened to its home folder (the server's private cache).
func (a attack) nodeScript() string {
	return `const fs = require("fs");
const out = [];
try { fs.writeFileSync(` + strconv.Quote(a.outside) + `, "pwned"); out.push("wrote outside"); } catch (e) { out.push("write outside: " + e.code); }
try { out.push("read secret: " + fs.readFileSync(` + strconv.Quote(a.secret) + `, "utf8")); } catch (e) { out.push("read secret: " + e.code); }
try { fs.readdirSync(` + strconv.Quote(os.Getenv("HOME")) + `); out.push("listed the person's home"); } catch (e) { out.push("list home: " + e.code); }
fs.writeFileSync(process.env.HOME + "/planted-ran", out.join("\n"));
`
}

// shScript is the same as a shell script.
func (a attack) shScript() string {
	return `#!/bin/sh
{
{ echo pwned > ` + a.outside + ` && echo "wrote outside"; } 2>/dev/null || echo "write outside: denied"
cat ` + a.secret + ` 2>/dev/null && echo "read secret" || echo "read secret: denied"
ls ` + os.Getenv("HOME") + ` >/dev/null 2>&1 && echo "listed the person's home" || echo "list home: denied"
` + "} > \"$HOME/planted-ran\" 2>&1\n"
}

// verdict waits for what the planted program saw (in the server's
// cache, when it ran at all) and checks, on the host, that it wrote and
// read nothing outside its box.
func (a attack) verdict(t *testing.T, server string, mustRun bool) {
	t.Helper()
	ran := filepath.Join(a.cache, server, "home", "planted-ran")
	var saw []byte
	done := func() bool {
		if _, err := os.Stat(a.outside); err == nil {
			return true
		}
		if b, err := os.ReadFile(ran); err == nil && len(b) > 0 {
			saw = b
			return true
		}
		return false
	}
	if mustRun {
		// The planted program runs when the server gets to it, which it
		// tells no one.
		gemkittest.Poll(90*time.Second, 200*time.Millisecond, done)
	} else {
		done()
	}
	t.Logf("the planted program saw:\n%s", saw)
	if _, err := os.Stat(a.outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the planted program wrote %s outside the workspace (stat: %v)", a.outside, err)
	}
	if mustRun && saw == nil {
		t.Fatalf("the planted program never ran (no %s)", ran)
	}
	for _, bad := range []string{"the-secret", "wrote outside", "listed the person's home"} {
		if strings.Contains(string(saw), bad) {
			t.Fatalf("the planted program reached outside its box: %q", bad)
		}
	}
}

// sandboxPool is a Pool of ws with its caches in a.cache and env as the
// person's environment.
func sandboxPool(t *testing.T, ws string, a attack, env []string, cfg Config) *codeintel.Tools {
	t.Helper()
	p, err := New(Options{Workspace: ws, Env: env, Config: cfg, CacheDir: a.cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	tl, err := codeintel.NewTools(source(p), ws, codeintel.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl
}

func withPath(path string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+path)
}

// basePath is the process's PATH with Go's own bin folder, which an
// unprivileged re-run's PATH lacks.
func basePath() string {
	path := os.Getenv("PATH")
	if fi, err := os.Stat("/usr/local/go/bin/go"); err == nil && !fi.IsDir() {
		path = "/usr/local/go/bin" + string(os.PathListSeparator) + path
	}
	return path
}

// A tool allowed to write the workspace plants TypeScript's server
// (node_modules/typescript, or Yarn's SDK folder), which
// typescript-language-server prefers to its own: the next code question
// runs it, but only inside the server's sandbox, which writes nothing
// outside the workspace and reads neither the secret beside it nor the
// person's home.
func TestPlantedTsserverBoxed(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "typescript-language-server")
	for _, dir := range []string{"node_modules/typescript", ".yarn/sdks/typescript"} {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			ws := codeinteltest.Fixture(t, "ts")
			a := newAttack(t)
			pkg := filepath.Join(ws, dir)
			if err := os.MkdirAll(filepath.Join(pkg, "lib"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"typescript","version":"5.9.3"}`), 0o644)
			os.WriteFile(filepath.Join(pkg, "lib", "tsserver.js"), []byte(a.nodeScript()), 0o644)
			tl := sandboxPool(t, ws, a, withPath(bin+string(os.PathListSeparator)+basePath()), Config{})
			got, _ := tl.Call(context.Background(), codeintel.ToolSymbols, json.RawMessage(`{"file":"src/store.ts"}`))
			t.Logf("code_symbols: %s", got)
			a.verdict(t, "typescript-language-server", true)
		})
	}
}

// With the person's virtualenv activated, a tool replaces
// .venv/bin/python3: pyright, asked a Python question, never runs it
// outside the box (its PATH is a tool's, without the workspace's
// folders), and the planted interpreter reaches nothing.
func TestPlantedVenvPythonBoxed(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "pyright-langserver")
	ws := codeinteltest.Fixture(t, "py")
	a := newAttack(t)
	venvBin := filepath.Join(ws, ".venv", "bin")
	if err := os.MkdirAll(venvBin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := a.shScript() + "exec /usr/bin/python3 \"$@\"\n"
	for _, name := range []string{"python3", "python"} {
		if err := os.WriteFile(filepath.Join(venvBin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(withPath(strings.Join([]string{venvBin, bin, basePath()}, string(os.PathListSeparator))), "VIRTUAL_ENV="+filepath.Join(ws, ".venv"))
	tl := sandboxPool(t, ws, a, env, Config{})
	// The real pyright answers once it has read the workspace, and says
	// nothing when.
	var got string
	if !gemkittest.Poll(90*time.Second, time.Second, func() bool {
		var isErr bool
		got, isErr = tl.Call(context.Background(), codeintel.ToolDefinition, json.RawMessage(`{"symbol":"greet"}`))
		return !isErr && strings.Contains(got, "shop/greet.py:11:5")
	}) {
		t.Fatalf("pyright never answered: %s", got)
	}
	t.Logf("code_definition: %s", got)
	a.verdict(t, "pyright", false)
}

// A server the person adds in gemkit's config runs in the same box; one
// whose command resolves into the workspace is refused with words.
func TestUserConfigServerBoxed(t *testing.T) {
	ws := codeinteltest.Fixture(t, "go")
	a := newAttack(t)
	binDir := t.TempDir()
	script := a.shScript()
	if err := os.WriteFile(filepath.Join(binDir, "my-ls"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.zz"), []byte("hello\n"), 0o644)
	// A link on PATH to a program in the workspace.
	os.WriteFile(filepath.Join(ws, "planted-ls"), []byte(script), 0o755)
	if err := os.Symlink(filepath.Join(ws, "planted-ls"), filepath.Join(binDir, "planted-ls")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.yy"), []byte("hello\n"), 0o644)
	cfg := Config{Servers: []Server{
		{Name: "my-ls", Extensions: map[string]string{".zz": "zz"}, Command: []string{"my-ls"}},
		{Name: "planted-ls", Extensions: map[string]string{".yy": "yy"}, Command: []string{"planted-ls"}},
	}}
	tl := sandboxPool(t, ws, a, withPath(binDir+string(os.PathListSeparator)+basePath()), cfg)
	got, _ := tl.Call(context.Background(), codeintel.ToolSymbols, json.RawMessage(`{"file":"notes.zz"}`))
	t.Logf("code_symbols notes.zz: %s", got)
	a.verdict(t, "my-ls", true)

	got, isErr := tl.Call(context.Background(), codeintel.ToolSymbols, json.RawMessage(`{"file":"notes.yy"}`))
	if !isErr || !strings.Contains(got, "inside "+ws) || !strings.Contains(got, "does not start a language server from there") {
		t.Fatalf("a server whose command lies in the workspace was not refused with words: %s", got)
	}
	if _, err := os.Stat(filepath.Join(a.cache, "planted-ls", "home", "planted-ran")); err == nil {
		t.Fatal("the server in the workspace ran")
	}
}

// The control: gopls still answers a definition right, from inside its
// own namespaces, and writes its caches only in its private folder.
func TestGoplsSandboxedAnswers(t *testing.T) {
	codeinteltest.Gopls(t)
	ws := codeinteltest.Fixture(t, "go")
	a := newAttack(t)
	p, err := New(Options{Workspace: ws, Env: withPath(basePath()), CacheDir: a.cache})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tl, err := codeintel.NewTools(source(p), ws, codeintel.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	warm(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet"}`, "greet/greet.go:16:6")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet"}`, "is defined at:", "greet/greet.go:16:6: func Greet(name string) string {")
	var pid int
	for _, s := range p.Servers() {
		if s.Name == "gopls" {
			pid = s.Pid
		}
	}
	if pid == 0 {
		t.Fatal("gopls is not running")
	}
	for _, ns := range []string{"mnt", "net", "pid"} {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		its, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
		if err != nil || its == mine {
			t.Fatalf("gopls shares gemkit's %s namespace (%s, %v)", ns, its, err)
		}
	}
	if _, err := os.Stat(filepath.Join(a.cache, "gopls", "go-build")); err != nil {
		t.Fatalf("gopls's build cache is not in its private folder: %v", err)
	}
}

// The same attacks and control as uid 65534.
func TestServersBoxedUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("re-runs the servers' tests as uid 65534, which takes seconds: runs without -short, as in CI")
	}
	sandboxtest.RerunUnprivileged(t, "^(TestPlantedTsserverBoxed|TestPlantedVenvPythonBoxed|TestUserConfigServerBoxed|TestGoplsSandboxedAnswers|TestServerNotStartedOutsideSandbox)$")
}

// Where the sandbox cannot start (here: a launcher whose child is not a
// gemkit binary), the server is not started at all, and the answer says
// why: it is never run outside.
func TestServerNotStartedOutsideSandbox(t *testing.T) {
	ws := codeinteltest.Fixture(t, "go")
	binDir, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	os.WriteFile(filepath.Join(binDir, "my-ls"), []byte("#!/bin/sh\necho ran > "+marker+"\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "notes.zz"), []byte("hello\n"), 0o644)
	p, err := New(Options{Workspace: ws, Env: withPath(binDir + string(os.PathListSeparator) + basePath()), CacheDir: t.TempDir(),
		Launcher: &sandbox.Launcher{Exe: "/bin/true"},
		Config:   Config{Servers: []Server{{Name: "my-ls", Extensions: map[string]string{".zz": "zz"}, Command: []string{"my-ls"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tl, err := codeintel.NewTools(source(p), ws, codeintel.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	got, isErr := tl.Call(context.Background(), codeintel.ToolSymbols, json.RawMessage(`{"file":"notes.zz"}`))
	if !isErr || !strings.Contains(got, "starting it in gemkit's sandbox") {
		t.Fatalf("answer: %s", got)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the server ran although its sandbox did not start (stat: %v)", err)
	}
}
