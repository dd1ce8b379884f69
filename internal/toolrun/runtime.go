package toolrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// Interpreter is a resolved runtime: the program to exec and the folders
// of its installation, which the sandbox lets the tool read.
type Interpreter struct {
	// Path is the absolute path to exec.
	Path string
	// Install are the installation prefixes (e.g. /root/.pyenv/versions/3.11.7).
	Install []string
}

// commands maps a runtime to the command looked up on PATH.
var commands = map[extension.Runtime]string{
	extension.RuntimePython: "python3",
	extension.RuntimeNode:   "node",
	extension.RuntimeShell:  "sh",
}

// selfPath asks an interpreter found through a shim for its real binary.
var selfPath = map[extension.Runtime][]string{
	extension.RuntimePython: {"-c", "import sys; print(sys.executable)"},
	extension.RuntimeNode:   {"-p", "process.execPath"},
}

// runtimes resolves and caches interpreters; a version manager's shim is
// slow to ask, so each (runtime, PATH, untrusted folders) is asked once
// per Runner.
type runtimes struct {
	mu    sync.Mutex
	cache map[string]Interpreter
}

// shimQuery runs a shim with args and returns what it printed. The
// Runner runs it inside the sandbox (askShim), never on the host.
type shimQuery func(ctx context.Context, shim string, args []string) (string, error)

// resolve finds the interpreter of rt on path, searching only the entries
// outside untrusted (permission.SearchPath): a program in a folder a
// tool may write is never started, not even to ask it which interpreter
// it is. A version manager's shim (pyenv, asdf, ...) is a script that
// needs the manager's whole tree and its own shell; it is asked for the
// real binary once, by ask, inside the sandbox, and that binary is what
// runs. The installation is the prefix above the binary's bin/ folder,
// both of the path found and of its real target (a venv's python is a
// symlink into the base installation).
func (r *runtimes) resolve(ctx context.Context, rt extension.Runtime, path, home string, untrusted []string, ask shimQuery) (Interpreter, error) {
	name, ok := commands[rt]
	if !ok {
		return Interpreter{}, fmt.Errorf("unknown runtime %q (want python, node or shell)", rt)
	}
	key := string(rt) + "\x00" + path + "\x00" + strings.Join(untrusted, "\x00")
	r.mu.Lock()
	if in, ok := r.cache[key]; ok {
		r.mu.Unlock()
		return in, nil
	}
	r.mu.Unlock()

	dirs, dropped := permission.SearchPath(path, untrusted)
	found, err := lookPath(name, dirs)
	if err != nil {
		if len(dropped) > 0 {
			return Interpreter{}, fmt.Errorf("runtime %s needs %s on PATH: %w (PATH entries inside folders extension tools may write are not searched: %s; put an interpreter installed elsewhere on PATH)",
				rt, name, err, strings.Join(dropped, ", "))
		}
		return Interpreter{}, fmt.Errorf("runtime %s needs %s on PATH: %w", rt, name, err)
	}
	exe := found
	if isScript(found) && selfPath[rt] != nil {
		out, err := ask(ctx, found, selfPath[rt])
		if err != nil {
			return Interpreter{}, fmt.Errorf("asking %s (a shim) for its interpreter inside the sandbox: %w", found, err)
		}
		exe = strings.TrimSpace(out)
		if !filepath.IsAbs(exe) || strings.ContainsAny(exe, "\n\x00") {
			return Interpreter{}, fmt.Errorf("%s reported the interpreter %q, not an absolute path", found, exe)
		}
	}
	if w, in := permission.WithinAny(untrusted, exe); in {
		return Interpreter{}, fmt.Errorf("runtime %s: %s resolves into %s, which extension tools may write; gemkit does not run an interpreter a tool could have planted. Put an interpreter installed elsewhere first on PATH", rt, found, w)
	}
	in := Interpreter{Path: exe}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return Interpreter{}, fmt.Errorf("runtime %s: %w", rt, err)
	}
	for _, p := range []string{exe, real} {
		if pre := prefix(p, home); pre != "" && !contains(in.Install, pre) {
			in.Install = append(in.Install, pre)
		}
	}
	r.mu.Lock()
	if r.cache == nil {
		r.cache = map[string]Interpreter{}
	}
	r.cache[key] = in
	r.mu.Unlock()
	return in, nil
}

// prefix is the installation folder of a binary: the parent of its bin/
// folder, or the folder itself. A prefix that would be /, the home folder
// or an ancestor of it is narrowed to the binary's own folder, and to the
// binary alone when that folder is the home.
func prefix(bin, home string) string {
	dir := filepath.Dir(bin)
	pre := dir
	if filepath.Base(dir) == "bin" {
		pre = filepath.Dir(dir)
	}
	tooWide := func(p string) bool {
		return p == "/" || home != "" && fsutil.Within(p, home)
	}
	if tooWide(pre) {
		pre = dir
	}
	if tooWide(pre) {
		return bin
	}
	return pre
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lookPath finds name in dirs (the user's PATH as SearchPath left it,
// not gemkit's own).
func lookPath(name string, dirs []string) (string, error) {
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// isScript reports whether the file starts with #!, as shims do.
func isScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	_, err = io.ReadFull(f, head)
	return err == nil && bytes.Equal(head, []byte("#!"))
}

// withPath is env with PATH set to path.
func withPath(env map[string]string, path string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	out["PATH"] = path
	return out
}

// maxShimOutput bounds what a shim may print when asked for its
// interpreter: one path.
const maxShimOutput = 4096

// askShim runs a version manager's shim with args inside the sandbox and
// returns its stdout. The shim reads what it needs of the installation
// (read: full, with every closed folder still closed), writes nothing but
// a private temp dir, reaches no network, and runs in an empty folder: a
// .python-version or .tool-versions in the workspace does not steer it.
// What it prints is only a path, checked by the caller.
func (r *Runner) askShim(ctx context.Context, shim string, args []string, env map[string]string, pol permission.Resolved, readOnly []string) (string, error) {
	home := pol.Home
	root, err := os.MkdirTemp("", "gemkit-shim-")
	if err != nil {
		return "", err
	}
	defer removeTemp(root)
	cwd, tmp := filepath.Join(root, "cwd"), filepath.Join(root, "tmp")
	for _, d := range []string{cwd, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stdout := &capWriter{max: maxShimOutput, onFull: cancel}
	stderr := &capWriter{max: maxShimOutput}
	cmd := &sandbox.Command{
		Policy: sandbox.Policy{
			Read: permission.AccessFull, Write: permission.AccessNone,
			Workspace: cwd, Home: home, ExtensionDir: cwd, TempDir: tmp,
			Protected: pol.Closed, ReadOnly: readOnly,
		},
		Path: shim, Args: args,
		Env: toolEnv(withPath(env, pol.SearchPath(env["PATH"])), nil, nil, home, tmp),
		Dir: cwd, Stdout: stdout, Stderr: stderr,
	}
	proc, err := r.launcher().Start(ctx, cmd)
	if err != nil {
		return "", err
	}
	if err := proc.Wait(); err != nil {
		return "", fmt.Errorf("%w%s", err, stderrTail(stderr.String()))
	}
	if stdout.isFull() {
		return "", fmt.Errorf("it printed more than %d bytes", maxShimOutput)
	}
	return stdout.String(), nil
}
