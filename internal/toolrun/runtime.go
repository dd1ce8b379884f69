package toolrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
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
// slow to ask, so each (runtime, PATH) is asked once per Runner.
type runtimes struct {
	mu    sync.Mutex
	cache map[string]Interpreter
}

// resolve finds the interpreter of rt on path. A version manager's shim
// (pyenv, asdf, ...) is a script that needs the manager's whole tree and
// its own shell; it is asked for the real binary once, and that binary is
// what runs. The installation is the prefix above the binary's bin/
// folder, both of the path found and of its real target (a venv's python
// is a symlink into the base installation).
//
// The shim runs outside the sandbox, so one inside a folder the tool may
// write (writable, below) is refused: an earlier run could have planted it.
func (r *runtimes) resolve(ctx context.Context, rt extension.Runtime, path, home string, writable []string) (Interpreter, error) {
	name, ok := commands[rt]
	if !ok {
		return Interpreter{}, fmt.Errorf("unknown runtime %q (want python, node or shell)", rt)
	}
	key := string(rt) + "\x00" + path + "\x00" + strings.Join(writable, "\x00")
	r.mu.Lock()
	if in, ok := r.cache[key]; ok {
		r.mu.Unlock()
		return in, nil
	}
	r.mu.Unlock()

	found, err := lookPath(name, path)
	if err != nil {
		return Interpreter{}, fmt.Errorf("runtime %s needs %s on PATH: %w", rt, name, err)
	}
	exe := found
	if isScript(found) && selfPath[rt] != nil {
		realShim, err := filepath.EvalSymlinks(found)
		if err != nil {
			return Interpreter{}, fmt.Errorf("runtime %s: %w", rt, err)
		}
		for _, w := range writable {
			if w != "" && (realShim == w || strings.HasPrefix(realShim, strings.TrimSuffix(w, "/")+"/")) {
				return Interpreter{}, fmt.Errorf("runtime %s: %s on PATH is a script (a version manager's shim?) inside %s, which this extension's tools may write; "+
					"gemkit would have to run it outside the sandbox to find the interpreter, so it refuses. Put the real interpreter's folder first on PATH", rt, found, w)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, found, selfPath[rt]...)
		cmd.Env = []string{"PATH=" + path, "HOME=" + home}
		out, err := cmd.Output()
		if err != nil {
			return Interpreter{}, fmt.Errorf("asking %s (a shim) for its interpreter: %w", found, err)
		}
		exe = strings.TrimSpace(string(out))
		if !filepath.IsAbs(exe) {
			return Interpreter{}, fmt.Errorf("%s reported the interpreter %q, not an absolute path", found, exe)
		}
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
		return p == "/" || home != "" && (p == home || strings.HasPrefix(home, p+"/"))
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

// lookPath finds name on the given PATH (the user's, not gemkit's own).
func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the tool's folder
		}
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
