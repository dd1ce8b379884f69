//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
)

// npxSetup is server-everything pinned by gemkit for a manifest that
// starts it with npx, and what the npx sides need.
type npxSetup struct {
	home, tree, program string
	bin                 string
	registry            string
	// npxCache is npx's own cache, warmed once, for the side that runs
	// npx as Gemini CLI does.
	npxCache string
	pinned   string
	close    func()
}

// benchTB lets the registry of the tests serve the benchmark: a failure
// of its set-up ends the program with its words.
type benchTB struct{ cleanups []func() }

func (b *benchTB) Helper() {}
func (b *benchTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("npm registry: "+format, args...))
}
func (b *benchTB) Cleanup(f func()) { b.cleanups = append(b.cleanups, f) }

// pinNPX serves interop/mcp-servers's packages from a loopback registry,
// links an extension whose manifest starts server-everything with npx in
// a home of its own, whose npm configuration names that registry, and
// switches it to gemkit, which pins the package; then warms npx's own
// cache for the side that runs npx.
func pinNPX(root, tmp, bin string) (n *npxSetup, err error) {
	tb := &benchTB{}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	reg := npmregistrytest.New(tb, nil)
	n = &npxSetup{home: filepath.Join(tmp, "home-npx"), bin: bin, registry: reg.URL, npxCache: filepath.Join(tmp, "npx-cache"),
		close: func() {
			for i := len(tb.cleanups) - 1; i >= 0; i-- {
				tb.cleanups[i]()
			}
		}}
	reg.AddInstalled(filepath.Join(root, "interop", "mcp-servers"))
	ext := filepath.Join(tmp, "ext-npx")
	for _, d := range []string{n.home, ext} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(n.home, ".npmrc"), []byte("registry="+reg.URL+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(ext, "gemini-extension.json"), []byte(npxManifest), 0o644); err != nil {
		return nil, err
	}
	env := environ(n.home, tmp)
	for _, args := range [][]string{{"extensions", "link", "--consent", ext}, {"extensions", "sandbox", "npxmcp"}} {
		c := exec.Command(bin, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("gemkit %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	c, err := extension.OpenStore(n.home).ServerChoice("npxmcp")
	if err != nil {
		return nil, err
	}
	p, ok := c.Packages["everything"]
	if !ok {
		return nil, fmt.Errorf("the switch pinned nothing: %+v", c)
	}
	n.tree, n.program = p.Tree, filepath.Join(p.Tree, filepath.FromSlash(p.Program))
	n.pinned = fmt.Sprintf("%s %s pinned in %s (%d packages, %d files)", p.Package, p.Version, p.Tree, p.Packages, p.Files)
	// npx's first run installs the package in its cache; the side
	// measures the runs after it.
	warm, err := dial(n.npxSide(tmp))
	if err != nil {
		return nil, fmt.Errorf("npx's first run: %w", err)
	}
	warm.Close()
	return n, nil
}

// npxSide runs npx as Gemini CLI does with the manifest, against the
// loopback registry, with npx's cache in the bench's folder.
func (n *npxSetup) npxSide(ws string) side {
	return side{name: "npx itself (Gemini CLI's way)", tool: "echo", cmd: func() *exec.Cmd {
		c := exec.Command("npx", "-y", "@modelcontextprotocol/server-everything")
		c.Dir = ws
		c.Env = append(environ(n.home, filepath.Dir(n.npxCache)), "npm_config_cache="+n.npxCache, "npm_config_update_notifier=false")
		return c
	}}
}

// sides are the npx sides: through gemkit (the pinned tree, in the
// sandbox), bare from the pinned tree, and npx itself.
func (n *npxSetup) sides(ws string) []side {
	return []side{
		{name: "npx pinned, through gemkit", tool: "npxmcp_echo", cmd: func() *exec.Cmd {
			c := exec.Command(n.bin, "mcp", "--code-intel=false")
			c.Dir, c.Env = ws, environ(n.home, filepath.Dir(n.npxCache))
			return c
		}},
		{name: "npx package, bare from its tree", tool: "echo", cmd: func() *exec.Cmd {
			c := exec.Command("node", n.program)
			c.Dir, c.Env = ws, environ(n.home, filepath.Dir(n.npxCache))
			return c
		}},
		n.npxSide(ws),
	}
}
