package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

type toolRunOut struct {
	stdout, stderr string
	code           int
}

func runGemkit(t *testing.T, bin, home, dir string, args ...string) toolRunOut {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "SECRET_TOKEN=hunter2"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return toolRunOut{out.String(), errb.String(), code}
}

func TestExtensionsRun(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	root := t.TempDir()
	home, ws, src := filepath.Join(root, "home"), filepath.Join(root, "ws"), filepath.Join(root, "src")
	for _, d := range []string{home, ws, filepath.Join(src, "tools")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("A"), 0o644)
	manifest := `{"name": "demo", "version": "1.0.0", "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [
  {"name": "count", "description": "counts", "executable": "tools/count.sh", "runtime": "shell", "output": "json",
   "args": [{"name": "word", "type": "string"}, {"name": "times", "type": "integer"}]},
  {"name": "fail", "description": "fails", "executable": "tools/fail.sh", "runtime": "shell"}]}`
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644)
	os.WriteFile(filepath.Join(src, "tools", "count.sh"), []byte(`printf '{"word":"%s","times":%s,"files":"%s","token":"%s"}\n' "$2" "$4" "$(ls | tr '\n' ' ')" "$SECRET_TOKEN"`+"\n"), 0o755)
	os.WriteFile(filepath.Join(src, "tools", "fail.sh"), []byte("echo broken >&2; exit 4\n"), 0o755)

	// Install without consent to tools (link records consent only when
	// given), so the first run has to ask.
	if r := runGemkit(t, bin, home, root, "extensions", "link", "--consent", src); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	// Changing the permissions voids the consent given at link time.
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(strings.Replace(manifest, `"read": "workspace"`, `"read": "workspace", "write": "workspace"`, 1)), 0o644)

	r := runGemkit(t, bin, home, ws, "extensions", "run", "demo", "count", "--word", "hi", "--times", "2")
	if r.code != 2 || !strings.Contains(r.stderr, "--consent") || !strings.Contains(r.stderr, "create, change and delete files in your workspace") {
		t.Fatalf("run without consent: %+v", r)
	}
	r = runGemkit(t, bin, home, ws, "extensions", "run", "--consent", "demo", "count", "--word", "hi", "--times", "2")
	if r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	var got map[string]any
	// With a write scope the absent protected names (GEMINI.md, ...) are
	// empty placeholders while the tool runs: a.txt is listed among them.
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got["word"] != "hi" || got["times"] != 2.0 || !slices.Contains(strings.Fields(fmt.Sprint(got["files"])), "a.txt") || got["token"] != "" {
		t.Fatalf("output %q: %v", r.stdout, err)
	}
	// Remembered: no flag needed the second time.
	if r := runGemkit(t, bin, home, ws, "extensions", "run", "demo", "count", "--word", "x", "--times", "1"); r.code != 0 {
		t.Fatalf("second run: %+v", r)
	}
	if r := runGemkit(t, bin, home, ws, "extensions", "run", "demo", "fail"); r.code != 1 || !strings.Contains(r.stderr, "exit status 4") {
		t.Fatalf("failing tool: %+v", r)
	}
	if r := runGemkit(t, bin, home, ws, "extensions", "run", "demo", "count", "--word", "x"); r.code != 2 || !strings.Contains(r.stderr, "missing argument --times") {
		t.Fatalf("missing arg: %+v", r)
	}
	if r := runGemkit(t, bin, home, ws, "extensions", "run", "demo", "nope"); r.code != 2 || !strings.Contains(r.stderr, `has no tool "nope"`) {
		t.Fatalf("unknown tool: %+v", r)
	}
	r = runGemkit(t, bin, home, ws, "extensions", "describe", "demo")
	if r.code != 0 || !strings.Contains(r.stdout, "Landlock") || !strings.Contains(r.stdout, "network (none)") {
		t.Fatalf("describe: %+v", r)
	}
}

// TestExtensionsRunNetwork runs a tool that may reach one loopback server
// (listed by address) through the real binary's proxy, and is refused
// another.
func TestExtensionsRunNetwork(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	allowed, other := serveText(t, "allowed body"), serveText(t, "other body")
	root := t.TempDir()
	home, ws, src := filepath.Join(root, "home"), filepath.Join(root, "ws"), filepath.Join(root, "src")
	for _, d := range []string{home, ws, src} {
		os.MkdirAll(d, 0o755)
	}
	manifest := fmt.Sprintf(`{"name": "net", "version": "1.0.0", "permissions": {"network": {"allowedHosts": ["127.0.0.1:%d"]}},
 "tools": [{"name": "fetch", "description": "fetches", "executable": "fetch.py", "runtime": "python", "args": [{"name": "port", "type": "integer"}]}]}`, allowed)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644)
	os.WriteFile(filepath.Join(src, "fetch.py"), []byte(`import sys, urllib.request
try:
    print(urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[2], timeout=5).read().decode())
except Exception as e:
    print("refused:", e); sys.exit(3)
`), 0o644)
	if r := runGemkit(t, bin, home, root, "extensions", "link", "--consent", src); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	r := runGemkit(t, bin, home, ws, "extensions", "run", "net", "fetch", "--port", fmt.Sprint(allowed))
	if r.code != 0 || r.stdout != "allowed body\n" {
		t.Fatalf("allowed host: %+v", r)
	}
	r = runGemkit(t, bin, home, ws, "extensions", "run", "net", "fetch", "--port", fmt.Sprint(other))
	if r.code != 1 || strings.Contains(r.stdout, "other body") || !strings.Contains(r.stderr, fmt.Sprintf("gemkit: sandbox: GET 127.0.0.1:%d denied", other)) {
		t.Fatalf("other host: %+v", r)
	}
}

// Bounds of TestSandboxChildStartsLight, in bytes allocated by package
// initialization before the child takes over (measured: about 130 KB in
// all, the largest third-party init 11 KB).
const (
	childInitBytes     = 256 << 10
	childPackageInitBy = 32 << 10
)

// TestSandboxChildStartsLight: the re-executed gemkit that sets up a
// tool's sandbox takes over before gemkit's heavy dependencies initialize
// (their init work, such as compiling JSON schemas or building HTTP
// routers, would add milliseconds to every tool run). Package
// initialization is traced by the Go runtime.
//
// Go initializes a package as soon as its imports are, in import-path
// order: small packages whose paths sort before the child's last import
// to initialize (golang.org/x/sys; the child uses path, not path/filepath,
// which initializes much later) run their init first whatever imports
// them, such as those of the model SDKs (text tables) and of the workspace
// watcher's gitignore matcher. The bound is on what initialization
// allocates, which the runtime reports exactly: a heavy init is one that
// builds something, and building allocates.
func TestSandboxChildStartsLight(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{"GEMKIT_SANDBOX_PROBE=1", "GODEBUG=inittrace=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	total, traced := 0, 0
	var heavy []string
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		traced++
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unexpected trace line %q", line)
		}
		total += b
		thirdParty := strings.Contains(strings.SplitN(f[1], "/", 2)[0], ".")
		if b > childPackageInitBy && (thirdParty || strings.HasPrefix(f[1], "net/http") || strings.HasPrefix(f[1], "html/template")) {
			heavy = append(heavy, fmt.Sprintf("%s (%d bytes)", f[1], b))
		}
	}
	if traced == 0 {
		t.Fatalf("no init trace in the sandbox probe's output:\n%s", out)
	}
	if len(heavy) > 0 || total > childInitBytes {
		t.Fatalf("the sandbox child initialized heavy packages %v (%d bytes in all, bound %d) before taking over:\n%s", heavy, total, childInitBytes, out)
	}
}

// TestOptionalArgsEndToEnd: an argument that is "required": false or has
// a default is optional everywhere: validate accepts it, the summary and
// the MCP schema show it as optional, and run passes the default.
func TestOptionalArgsEndToEnd(t *testing.T) {
	t.Parallel()
	bin, root, home, ws, src := toolExtension(t, `{"name": "tools-ext", "version": "1.0.0",
 "tools": [{"name": "slugify", "description": "makes a slug", "executable": "tools/slug.sh", "runtime": "shell",
   "args": [{"name": "text", "type": "string"}, {"name": "maxLength", "type": "integer", "default": 40},
            {"name": "sep", "type": "string", "required": false}]}]}`, "slug.sh", `echo "$*"`+"\n")

	if r := runGemkit(t, bin, home, root, "extensions", "validate", src); r.code != 0 {
		t.Fatalf("validate: %+v", r)
	}
	if r := runGemkit(t, bin, home, root, "extensions", "link", "--consent", src); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	r := runGemkit(t, bin, home, ws, "extensions", "summary")
	if r.code != 0 || !strings.Contains(r.stdout, "slugify(text: string, maxLength?: integer = 40, sep?: string)") {
		t.Errorf("summary does not show the optional arguments:\n%+v", r)
	}
	r = runGemkit(t, bin, home, ws, "extensions", "run", "tools-ext", "slugify", "--text", "Hello World")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "--text Hello World --maxLength 40" {
		t.Errorf("run without the optional arguments: %+v", r)
	}
	r = runGemkit(t, bin, home, ws, "extensions", "run", "tools-ext", "slugify", "--text", "a", "--maxLength", "3", "--sep", "_")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "--text a --maxLength 3 --sep _" {
		t.Errorf("run with every argument: %+v", r)
	}
	r = runGemkit(t, bin, home, ws, "extensions", "describe", "tools-ext")
	if r.code != 0 || !strings.Contains(r.stdout, "--maxLength <integer> (optional, default 40)") || !strings.Contains(r.stdout, "--sep <string> (optional)") {
		t.Errorf("describe: %+v", r)
	}
}

// TestSandboxRefusalNamesThePermission: a tool that writes with write
// "none" fails with its own traceback, shown once, and one line naming
// the permission that refused it.
func TestSandboxRefusalNamesThePermission(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "python3", "python3")
	bin, root, home, ws, src := toolExtension(t, `{"name": "ro", "version": "1.0.0", "permissions": {"filesystem": {"read": "workspace", "write": "none"}},
 "tools": [{"name": "write", "description": "writes a file", "executable": "tools/w.py", "runtime": "python"}]}`,
		"w.py", "open('out.txt', 'w').write('x')\n")
	if r := runGemkit(t, bin, home, root, "extensions", "link", "--consent", src); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	r := runGemkit(t, bin, home, ws, "extensions", "run", "ro", "write")
	if r.code != 1 || !strings.Contains(r.stderr, `permissions.filesystem.write is "none"`) {
		t.Fatalf("run: %+v", r)
	}
	if n := strings.Count(r.stderr, "Read-only file system"); n != 1 {
		t.Errorf("the traceback is shown %d times, want once:\n%s", n, r.stderr)
	}
}

// toolExtension writes an extension of one tool (tools/<script>) in a
// fresh folder src, beside an empty home and workspace, for the real
// binary bin to link and run.
func toolExtension(t *testing.T, manifest, script, body string) (bin, root, home, ws, src string) {
	t.Helper()
	bin, root = gemkittest.Gemkit(t), t.TempDir()
	home, ws, src = filepath.Join(root, "home"), filepath.Join(root, "ws"), filepath.Join(root, "src")
	for _, d := range []string{home, ws, filepath.Join(src, "tools")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tools", script), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, root, home, ws, src
}
