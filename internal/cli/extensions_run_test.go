package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	os.WriteFile(filepath.Join(src, "tools", "count.sh"), []byte(`printf '{"word":"%s","times":%s,"files":"%s","token":"%s"}\n' "$2" "$4" "$(ls)" "$SECRET_TOKEN"`+"\n"), 0o755)
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
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got["word"] != "hi" || got["times"] != 2.0 || got["files"] != "a.txt" || got["token"] != "" {
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
	serve := func(body string) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return ln.Addr().(*net.TCPAddr).Port
	}
	allowed, other := serve("allowed body"), serve("other body")
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

// modelSDKInit are the packages let through by TestSandboxChildStartsLight.
var modelSDKInit = map[string]bool{
	"github.com/google/go-cmp/cmp/internal/diff":  true, // genai
	"github.com/google/go-cmp/cmp/internal/value": true, // genai
	"github.com/tidwall/gjson":                    true, // openai-go
	"github.com/tidwall/pretty":                   true, // openai-go
	"github.com/go-git/gcfg/types":                true, // go-git's gitignore matcher (internal/wswatch)
}

// TestSandboxChildStartsLight: the re-executed gemkit that sets up a
// tool's sandbox takes over before gemkit's dependencies initialize (their
// init work, such as compiling JSON schemas, would add milliseconds to
// every tool run). Package initialization is traced by the Go runtime.
//
// The model SDKs of the agent (internal/model) and the gitignore matcher
// of the workspace watcher bring packages whose import paths sort before
// golang.org/x/sys, which the child needs, and whose init is a few
// variables (under 0.03 ms together, as traced): Go initializes them first
// whatever imports them. They are let through by name; anything else still
// fails the test. The child imports nothing that initializes after
// golang.org/x/sys (path, not path/filepath), so it takes over as soon as
// that is ready.
func TestSandboxChildStartsLight(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{"GEMKIT_SANDBOX_PROBE=1", "GODEBUG=inittrace=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	var heavy []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		if modelSDKInit[f[1]] {
			continue
		}
		if strings.HasPrefix(f[1], "github.com/") || strings.HasPrefix(f[1], "net/http") || strings.HasPrefix(f[1], "html/template") {
			heavy = append(heavy, f[1])
		}
	}
	if len(heavy) > 0 {
		t.Fatalf("the sandbox child initialized %v before taking over:\n%s", heavy, out)
	}
}
