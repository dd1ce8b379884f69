package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/permission"
)

// codeIntelQuoting is what the code-intelligence answers of the
// workspace ws may quote besides its files (codeintel.Quoting): the
// read-only folders of its language servers (serverReadRoots), and no
// path closed to every tool (permission.ClosedPaths, with the running
// servers' secrets wherever their environment put them).
func (a *app) codeIntelQuoting(ws string, table []langserver.Server) codeintel.Quoting {
	home, _ := resolveHome("")
	getenv := a.getenv
	in := permission.ClosedInputs{
		Home: home, ClaudeConfigDir: getenv("CLAUDE_CONFIG_DIR"), QwenHome: getenv("QWEN_HOME"), ConfigDir: getenv("XDG_CONFIG_HOME"),
		TempDirs: []string{getenv("TMPDIR"), getenv("TMP"), getenv("TEMP"), os.TempDir(), "/tmp"},
	}
	if h := getenv(extension.HomeEnv); filepath.IsAbs(h) {
		in.GeminiHome = h
	}
	locator := &permission.Locator{}
	return codeintel.Quoting{
		Roots: func() []string {
			return serverReadRoots(ws, home, table, getenv("PATH"), goEnv)
		},
		Closed: func() []string {
			in := in
			in.Writers = locator.Writers()
			return permission.ClosedPaths(in)
		},
	}
}

// serverReadRoots are the folders outside the workspace (and not holding
// home) a workspace's
// language servers read and an answer may quote: the installation of
// each server of table found on PATH (the node_modules folder an npm
// server lies in, which holds the TypeScript it ships and pyright's
// type stubs; else the server's own folder); when a Go server is in
// use, the Go toolchain (GOROOT) and module cache (GOMODCACHE); when a
// Python one is, Python's library and packages; when a TypeScript one
// is, Node's global packages. PATH
// is searched without the workspace's folders (permission.SearchPath): a
// program planted there is neither run nor taken for an installation.
//
// The servers' sandbox profiles read the same folders; this is the one
// place that lists them for answers.
func serverReadRoots(ws, home string, table []langserver.Server, path string, goEnv func(goBin string, vars ...string) []string) []string {
	kept, _ := permission.SearchPath(path, permission.Untrusted(ws, "", nil))
	look := func(name string) string {
		for _, dir := range kept {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				if real, err := filepath.EvalSymlinks(p); err == nil {
					return real
				}
			}
		}
		return ""
	}
	var roots []string
	goServer, pyServer, jsServer := false, false, false
	for _, s := range table {
		if s.Disabled || len(s.Command) == 0 || strings.ContainsRune(s.Command[0], filepath.Separator) {
			continue
		}
		bin := look(s.Command[0])
		if bin == "" {
			continue
		}
		_, goServer0 := s.Extensions[".go"]
		_, pyServer0 := s.Extensions[".py"]
		_, jsServer0 := s.Extensions[".ts"]
		goServer, pyServer, jsServer = goServer || goServer0, pyServer || pyServer0, jsServer || jsServer0
		slashed := filepath.ToSlash(bin)
		if i := strings.Index(slashed, "/node_modules/"); i >= 0 {
			roots = append(roots, filepath.FromSlash(slashed[:i+len("/node_modules")]))
		} else {
			roots = append(roots, filepath.Dir(bin))
		}
	}
	if goServer {
		if goBin := look("go"); goBin != "" {
			roots = append(roots, goEnv(goBin, "GOROOT", "GOMODCACHE")...)
		}
	}
	// Python's and Node's installations are told from where their
	// programs lie, without running them: <prefix>/bin/python3.12 has its
	// library in <prefix>/lib/python3.12 (and Debian's packages in
	// <prefix>/lib/python3/dist-packages); <prefix>/bin/node its global
	// packages in <prefix>/lib/node_modules.
	if pyServer {
		if py := look("python3"); py != "" {
			prefix := filepath.Dir(filepath.Dir(py))
			roots = append(roots, filepath.Join(prefix, "lib", filepath.Base(py)), filepath.Join(prefix, "lib", "python3", "dist-packages"))
		}
	}
	if jsServer {
		if node := look("node"); node != "" {
			roots = append(roots, filepath.Join(filepath.Dir(filepath.Dir(node)), "lib", "node_modules"))
		}
	}
	// A folder that holds the home folder (a server at /gopls, a
	// GOMODCACHE of /) would open all of it: such a root is left out.
	out := roots[:0]
	for _, r := range roots {
		if filepath.IsAbs(r) && r != "/" && (home == "" || !fsutil.Within(r, home)) {
			out = append(out, r)
		}
	}
	return out
}

// goEnv is `go env` of vars, as the Go toolchain goBin answers it in a
// neutral folder, never switching to another toolchain a go.mod asks for
// (GOTOOLCHAIN=local): the values that are absolute paths.
func goEnv(goBin string, vars ...string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append([]string{"env"}, vars...)...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if filepath.IsAbs(l) {
			dirs = append(dirs, filepath.Clean(l))
		}
	}
	return dirs
}
