//go:build linux

// Command codeintel measures gemkit's code intelligence (`gemkit mcp`'s
// code_* tools, its per-workspace broker and gopls) side by side with
// cclsp 0.7.0 (npm, the most-used MCP bridge to language servers), with
// the same gopls on the same Go module, in one run:
//
//   - warm definition and references, p50 over -n calls each: gemkit by
//     position and by name from a call site, cclsp as it must be asked
//     (in the file that declares the name), and gopls asked directly by
//     a minimal LSP client (internal/lspclient), so that gemkit's own time
//     over gopls's shows;
//
//   - start to the first correct answer: process start, MCP initialize,
//     a definition call, until an answer names the right line;
//
//   - memory of the whole process tree (the MCP servers, what they
//     started, gemkit's broker with its gopls) for 1, 2 and 4 agents in
//     one workspace, each having asked one question: RSS summed, and PSS
//     (shared pages divided among the processes that share them);
//
//   - the faults issue 31 lists of cclsp: definition from a call site by
//     name, a file an agent changed read again, answers outside the
//     workspace named as such, bounded answers, duplicate servers, the
//     processes left once the agents have gone.
//
//     go run ./bench/codeintel            # -n 200, 5 starts each
//     go run ./bench/codeintel -quick     # -n 20, 2 starts each
//     go run ./bench/codeintel -ref /path/to/older/gemkit
//
// With -ref, a reference gemkit binary (an earlier build, to see what a
// change costs) is measured in the same run: its cold starts alternate
// with the others', and its warm definitions are interleaved with
// theirs. It runs with a runtime folder of its own
// (XDG_RUNTIME_DIR), so that its broker and gopls are its own.
//
// The module is the tests' Go shop with -packages generated packages of
// five files of ten functions, each calling greet.Greet (1,000 uses at
// the default 20). The MCP client is bench/internal/mcpline, the same
// for both servers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/bench/internal/mcpline"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	n := flag.Int("n", 200, "warm calls of each kind")
	starts := flag.Int("starts", 5, "cold starts of each server")
	pkgs := flag.Int("packages", 20, "generated packages")
	quick := flag.Bool("quick", false, "20 calls and 2 starts of each kind")
	ref := flag.String("ref", "", "a reference gemkit binary measured in the same run")
	gemkit := flag.String("gemkit", "", "gemkit binary (default: built from the repository), such as main's, for a reference run")
	flag.Parse()
	if *quick {
		*n, *starts = 20, 2
	}
	if err := run(*n, *starts, *pkgs, *gemkit, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "bench/codeintel:", err)
		os.Exit(1)
	}
}

// env is everything the run shares.
type env struct {
	root, tmp, ws, gemkit, cclsp, gopls, node string
	cclspConfig                               string
	environ                                   []string
	// ref is the reference gemkit binary (-ref), "" for none, and
	// refEnviron its environment.
	ref        string
	refEnviron []string
}

func run(n, starts, pkgs int, gemkit, ref string) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gemkit-bench-codeintel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tmp, _ = filepath.EvalSymlinks(tmp)
	e := &env{root: root, tmp: tmp, ws: filepath.Join(tmp, "ws")}
	if e.gopls, err = exec.LookPath("gopls"); err != nil {
		return fmt.Errorf("gopls is not on PATH: run scripts/setup-and-test (GOBIN=/usr/local/bin go install golang.org/x/tools/gopls@v0.23.0)")
	}
	if e.node, err = exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not on PATH")
	}
	e.cclsp = filepath.Join(root, "interop", "node_modules", "cclsp", "dist", "index.js")
	if _, err := os.Stat(e.cclsp); err != nil {
		return fmt.Errorf("cclsp is not installed: run `npm ci` in interop/")
	}
	if e.gemkit = gemkit; gemkit == "" {
		if e.gemkit, err = benchenv.BuildGemkit(root, tmp); err != nil {
			return err
		}
	}
	if err := makeFixture(root, e.ws, pkgs); err != nil {
		return err
	}
	e.cclspConfig = filepath.Join(tmp, "cclsp.json")
	cfg, _ := json.Marshal(map[string]any{"servers": []any{map[string]any{"extensions": []string{"go"}, "command": []string{e.gopls}, "rootDir": e.ws}}})
	os.WriteFile(e.cclspConfig, cfg, 0o644)
	// A config folder of the run's own: no user's codeIntel object.
	e.environ = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "CCLSP_CONFIG_PATH="+e.cclspConfig)
	if ref != "" {
		if e.ref, err = filepath.Abs(ref); err != nil {
			return err
		}
		if _, err := os.Stat(e.ref); err != nil {
			return fmt.Errorf("-ref: %w", err)
		}
		rt := filepath.Join(tmp, "ref-runtime")
		if err := os.Mkdir(rt, 0o700); err != nil {
			return err
		}
		e.refEnviron = append(append([]string(nil), e.environ...), "XDG_RUNTIME_DIR="+rt)
	}
	fmt.Printf("gopls: %s\nfixture: %d generated packages, %d uses of greet.Greet\n\n", goplsVersion(e.gopls), pkgs, pkgs*50)

	res := &results{}
	if err := e.startTimes(starts, res); err != nil {
		return err
	}
	if err := e.warm(n, res); err != nil {
		return err
	}
	if err := e.memory(res); err != nil {
		return err
	}
	if err := e.faults(res); err != nil {
		return err
	}
	res.print()
	return nil
}

func goplsVersion(gopls string) string {
	out, _ := exec.Command(gopls, "version").Output()
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// makeFixture copies the tests' Go shop to ws and adds pkgs generated
// packages, each function of which calls greet.Greet.
func makeFixture(root, ws string, pkgs int) error {
	src := filepath.Join(root, "internal", "codeintel", "codeinteltest", "testdata", "go")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(ws, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ws, rel), b, 0o644)
	})
	if err != nil {
		return err
	}
	for p := range pkgs {
		dir := filepath.Join(ws, "gen", fmt.Sprintf("p%02d", p))
		os.MkdirAll(dir, 0o755)
		for f := range 5 {
			var b strings.Builder
			fmt.Fprintf(&b, "package p%02d\n\nimport \"example.com/shop/greet\"\n\n", p)
			for i := range 10 {
				fmt.Fprintf(&b, "// F%d_%d greets the %d-th visitor.\nfunc F%d_%d() string {\n\treturn greet.Greet(\"visitor %d\")\n}\n\n", f, i, f*10+i, f, i, f*10+i)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// server is one MCP server process with a lean client on its stdio.
type server struct{ *mcpline.Conn }

func (e *env) startGemkit() (*server, error) {
	return e.startServer(e.gemkit, "mcp", "--workspace", e.ws)
}

func (e *env) startCclsp() (*server, error) {
	return e.startServer(e.node, e.cclsp)
}

func (e *env) startRef() (*server, error) {
	return e.startServerEnv(e.refEnviron, e.ref, "mcp", "--workspace", e.ws)
}

func (e *env) startServer(name string, args ...string) (*server, error) {
	return e.startServerEnv(e.environ, name, args...)
}

func (e *env) startServerEnv(environ []string, name string, args ...string) (*server, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = e.ws
	cmd.Env = environ
	cmd.Stderr = io.Discard
	c, err := mcpline.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &server{c}, nil
}

// call calls a tool and returns its text.
func (s *server) call(tool string, args map[string]any) (string, error) {
	raw, err := s.Request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	json.Unmarshal(raw, &r)
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// The questions, the same for both where both can answer them.
var (
	gemkitDefByName = map[string]any{"symbol": "Greet", "file": "main.go"}
	gemkitDefByPos  = map[string]any{"file": "main.go", "line": 15, "column": 20}
	gemkitRefsByPos = map[string]any{"file": "greet/greet.go", "line": 16, "column": 6}
	gemkitFewByPos  = map[string]any{"file": "store/store.go", "line": 30, "column": 17}
	cclspFew        = map[string]any{"file_path": "store/store.go", "symbol_name": "Total", "symbol_kind": "method", "include_declaration": true}
	cclspDef        = map[string]any{"file_path": "greet/greet.go", "symbol_name": "Greet", "symbol_kind": "function"}
	cclspRefs       = map[string]any{"file_path": "greet/greet.go", "symbol_name": "Greet", "symbol_kind": "function", "include_declaration": true}
	// Hover of the function Greet and implementations of the interface
	// Greeter, by position (as cclsp takes them) and by name.
	gemkitHoverByPos  = map[string]any{"file": "greet/greet.go", "line": 16, "column": 6}
	gemkitHoverByName = map[string]any{"symbol": "Greet", "file": "greet/greet.go"}
	gemkitImplByPos   = map[string]any{"file": "greet/greet.go", "line": 5, "column": 6}
	gemkitImplByName  = map[string]any{"symbol": "Greeter", "file": "greet/greet.go"}
	cclspHover        = map[string]any{"file_path": "greet/greet.go", "line": 16, "character": 6}
	cclspImpl         = map[string]any{"file_path": "greet/greet.go", "line": 5, "character": 6}
)

// hoverOK and implOK recognize a correct hover and implementations
// answer, from either server.
func hoverOK(s string) bool { return strings.Contains(s, "func Greet(name string) string") }
func implOK(s string) bool {
	return strings.Contains(s, "greet.go:10") || strings.Contains(s, "greet.go:10:6")
}

// gemkitDefOK and cclspDefOK recognize a correct definition answer.
func gemkitDefOK(s string) bool { return strings.Contains(s, "greet/greet.go:16:6") }
func cclspDefOK(s string) bool  { return strings.Contains(s, "greet.go:16") }

type results struct {
	gemkitStart, cclspStart         []time.Duration
	refStart, refDefPos, refDefName []time.Duration // -ref
	gemkitDefPos, gemkitDefName     []time.Duration
	gemkitRefs, cclspDef, cclspRefs []time.Duration
	gemkitFew, cclspFew, goplsFew   []time.Duration
	gemkitPing, cclspPing           []time.Duration
	goplsDef, goplsRefs             []time.Duration
	gemkitHover, gemkitHoverName    []time.Duration
	gemkitImpl, gemkitImplName      []time.Duration
	cclspHover, cclspImpl           []time.Duration
	goplsHover, goplsImpl           []time.Duration
	mem                             map[string][3]memFigure // "gemkit", "cclsp" → 1, 2, 4 agents
	faults                          [][3]string
	gemkitLeft, cclspLeft           int
	gemkitLeftWhat, cclspLeftWhat   string
}

// startTimes measures process start to the first correct definition,
// alternating the two servers (each start finds no broker and no server
// running).
func (e *env) startTimes(starts int, res *results) error {
	kinds := []string{"gemkit", "cclsp"}
	if e.ref != "" {
		kinds = []string{"gemkit", "ref", "cclsp"}
	}
	// One start of each gemkit first, not measured: gemkit's gopls runs
	// in its sandbox with a build cache of its own (the reference's
	// uses the person's, as cclsp's gopls does), and a measured start is
	// the start of a person who asked a question once before.
	for _, which := range kinds[:len(kinds)-1] {
		start := e.startGemkit
		if which == "ref" {
			start = e.startRef
		}
		s, err := start()
		if err != nil {
			return err
		}
		for t0 := time.Now(); time.Since(t0) < time.Minute; {
			if text, err := s.call("code_definition", gemkitDefByName); err == nil && gemkitDefOK(text) {
				break
			}
		}
		s.Close()
		if err := e.waitNoBroker(); err != nil {
			return err
		}
	}
	for i := range starts {
		for _, which := range kinds {
			if i == 0 && which == "gemkit" {
				// A first gopls start fills the build cache for both.
				if err := e.waitNoBroker(); err != nil {
					return err
				}
			}
			var s *server
			var err error
			t0 := time.Now()
			switch which {
			case "gemkit":
				s, err = e.startGemkit()
			case "ref":
				s, err = e.startRef()
			default:
				s, err = e.startCclsp()
			}
			if err != nil {
				return err
			}
			ok := false
			for time.Since(t0) < time.Minute {
				var text string
				if which != "cclsp" {
					text, err = s.call("code_definition", gemkitDefByName)
					ok = err == nil && gemkitDefOK(text)
				} else {
					text, err = s.call("find_definition", cclspDef)
					ok = err == nil && cclspDefOK(text)
				}
				if ok {
					break
				}
			}
			d := time.Since(t0)
			s.Close()
			if !ok {
				return fmt.Errorf("%s gave no correct definition within a minute", which)
			}
			if which != "cclsp" {
				if which == "gemkit" {
					res.gemkitStart = append(res.gemkitStart, d)
				} else {
					res.refStart = append(res.refStart, d)
				}
				if err := e.waitNoBroker(); err != nil {
					return err
				}
			} else {
				res.cclspStart = append(res.cclspStart, d)
				e.killLeft()
			}
		}
	}
	return nil
}

// waitNoBroker waits until the workspace's broker has gone (its last
// client went), so that the next start is cold.
func (e *env) waitNoBroker() error {
	deadline := time.Now().Add(30 * time.Second)
	for len(e.brokers()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the broker did not end after its last client went")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// brokers are the running brokers of the workspace.
func (e *env) brokers() []int {
	var out []int
	for _, p := range allProcs() {
		if strings.Contains(p.cmdline, "codeintel\x00broker\x00--workspace\x00"+e.ws+"\x00") {
			out = append(out, p.pid)
		}
	}
	return out
}

// killLeft ends the gopls processes cclsp left running in the workspace
// (it does not end them when its client goes: a fault counted apart).
func (e *env) killLeft() {
	for _, p := range allProcs() {
		if p.cwd == e.ws && (p.comm == "gopls" || p.comm == "node") {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
}

// warm measures warm calls: gemkit and cclsp through MCP, gopls asked
// directly.
func (e *env) warm(n int, res *results) error {
	g, err := e.startGemkit()
	if err != nil {
		return err
	}
	defer func() { g.Close(); e.waitNoBroker() }()
	c, err := e.startCclsp()
	if err != nil {
		return err
	}
	defer func() { c.Close(); e.killLeft() }()
	var r *server
	if e.ref != "" {
		if r, err = e.startRef(); err != nil {
			return err
		}
		defer func() { r.Close(); e.waitNoBroker() }()
		for range 3 {
			r.call("code_definition", gemkitDefByName)
			r.call("code_definition", gemkitDefByPos)
		}
	}
	// Warm both up.
	for range 3 {
		g.call("code_definition", gemkitDefByName)
		g.call("code_definition", gemkitDefByPos)
		g.call("code_references", gemkitRefsByPos)
		g.call("code_references", gemkitFewByPos)
		c.call("find_references", cclspFew)
		c.call("find_definition", cclspDef)
		c.call("find_references", cclspRefs)
		g.call("code_hover", gemkitHoverByPos)
		g.call("code_hover", gemkitHoverByName)
		g.call("code_implementations", gemkitImplByPos)
		g.call("code_implementations", gemkitImplByName)
		c.call("get_hover", cclspHover)
		c.call("find_implementation", cclspImpl)
	}
	ctx := context.Background()
	dc, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{e.gopls}, Dir: e.ws})
	if err != nil {
		return err
	}
	defer dc.Shutdown(ctx)
	direct := goplsDirect{dc}
	main, greet := filepath.Join(e.ws, "main.go"), filepath.Join(e.ws, "greet", "greet.go")
	dc.Open(main, "go")
	dc.Open(greet, "go")
	store := filepath.Join(e.ws, "store", "store.go")
	dc.Open(store, "go")
	use := codeintel.DocPos{Path: main, Pos: codeintel.Position{Line: 14, Character: 19}}
	decl := codeintel.DocPos{Path: greet, Pos: codeintel.Position{Line: 15, Character: 5}}
	total := codeintel.DocPos{Path: store, Pos: codeintel.Position{Line: 29, Character: 16}}
	iface := codeintel.DocPos{Path: greet, Pos: codeintel.Position{Line: 4, Character: 5}}
	for range 3 {
		direct.Definition(ctx, use)
		direct.References(ctx, decl)
		direct.Hover(ctx, decl)
		direct.Implementations(ctx, iface)
	}

	timeIt := func(dst *[]time.Duration, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		*dst = append(*dst, time.Since(t0))
		return nil
	}
	check := func(ok bool, what, got string) error {
		if !ok {
			return fmt.Errorf("%s answered wrongly: %.300s", what, got)
		}
		return nil
	}
	tool := func(dst *[]time.Duration, s *server, name string, args map[string]any, ok func(string) bool) func() error {
		return func() error {
			return timeIt(dst, func() error {
				text, err := s.call(name, args)
				if err != nil {
					return err
				}
				return check(ok(text), name, text)
			})
		}
	}
	// Interleaved, so that every figure sees the same load, and in a new
	// order each round (the same orders every run): a question asked
	// right after another kind of question pays for the switch (caches of
	// gopls, of the processes between), and a fixed order would charge
	// that to the same figures every round.
	order := rand.New(rand.NewPCG(1, 2))
	for range n {
		steps := []func() error{
			tool(&res.gemkitHover, g, "code_hover", gemkitHoverByPos, hoverOK),
			tool(&res.gemkitHoverName, g, "code_hover", gemkitHoverByName, hoverOK),
			tool(&res.cclspHover, c, "get_hover", cclspHover, hoverOK),
			func() error {
				return timeIt(&res.goplsHover, func() error {
					h, err := direct.Hover(ctx, decl)
					if err == nil && !hoverOK(h.Text) {
						err = fmt.Errorf("gopls hover: %q", h.Text)
					}
					return err
				})
			},
			tool(&res.gemkitImpl, g, "code_implementations", gemkitImplByPos, implOK),
			tool(&res.gemkitImplName, g, "code_implementations", gemkitImplByName, implOK),
			tool(&res.cclspImpl, c, "find_implementation", cclspImpl, implOK),
			func() error {
				return timeIt(&res.goplsImpl, func() error {
					l, err := direct.Implementations(ctx, iface)
					if err == nil && (len(l) != 1 || l[0].Range.Start.Line != 9) {
						err = fmt.Errorf("gopls implementations: %+v", l)
					}
					return err
				})
			},
			func() error {
				return timeIt(&res.gemkitDefPos, func() error {
					s, err := g.call("code_definition", gemkitDefByPos)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "gemkit code_definition by position", s)
				})
			},
			func() error {
				return timeIt(&res.gemkitDefName, func() error {
					s, err := g.call("code_definition", gemkitDefByName)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "gemkit code_definition by name", s)
				})
			},
			func() error {
				return timeIt(&res.gemkitRefs, func() error {
					s, err := g.call("code_references", gemkitRefsByPos)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "references to"), "gemkit code_references", s)
				})
			},
			func() error {
				return timeIt(&res.cclspDef, func() error {
					s, err := c.call("find_definition", cclspDef)
					if err != nil {
						return err
					}
					return check(cclspDefOK(s), "cclsp find_definition", s)
				})
			},
			func() error {
				return timeIt(&res.cclspRefs, func() error {
					s, err := c.call("find_references", cclspRefs)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "main.go"), "cclsp find_references", s)
				})
			},
			func() error {
				return timeIt(&res.gemkitPing, func() error { _, err := g.Request("ping", map[string]any{}); return err })
			},
			func() error {
				return timeIt(&res.cclspPing, func() error { _, err := c.Request("ping", map[string]any{}); return err })
			},
			func() error {
				return timeIt(&res.goplsDef, func() error {
					l, err := direct.Definition(ctx, use)
					if err == nil && (len(l) != 1 || l[0].Range.Start.Line != 15) {
						err = fmt.Errorf("gopls definition: %+v", l)
					}
					return err
				})
			},
			func() error {
				return timeIt(&res.goplsRefs, func() error {
					_, err := direct.References(ctx, decl)
					return err
				})
			},
			func() error {
				return timeIt(&res.gemkitFew, func() error {
					s, err := g.call("code_references", gemkitFewByPos)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "2 references to"), "gemkit code_references of Store.Total", s)
				})
			},
			func() error {
				return timeIt(&res.cclspFew, func() error {
					s, err := c.call("find_references", cclspFew)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "main.go"), "cclsp find_references of Total", s)
				})
			},
			func() error {
				return timeIt(&res.goplsFew, func() error {
					l, err := direct.References(ctx, total)
					if err == nil && len(l) != 2 {
						err = fmt.Errorf("gopls references of Total: %+v", l)
					}
					return err
				})
			},
		}
		if r != nil {
			steps = append(steps, func() error {
				return timeIt(&res.refDefPos, func() error {
					s, err := r.call("code_definition", gemkitDefByPos)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "reference gemkit code_definition by position", s)
				})
			}, func() error {
				return timeIt(&res.refDefName, func() error {
					s, err := r.call("code_definition", gemkitDefByName)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "reference gemkit code_definition by name", s)
				})
			})
		}
		order.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
	}
	return nil
}

// process is one process of the machine.
type process struct {
	pid, ppid int
	comm, cwd string
	cmdline   string // its arguments, each ended by a NUL
	rss, pss  int64  // bytes
}

func allProcs() []process {
	pids, _ := proc.Pids()
	var out []process
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil || st.State == 'Z' {
			continue
		}
		cwd, _ := proc.Cwd(pid)
		args, _ := proc.Cmdline(pid)
		cmdline := ""
		for _, a := range args {
			cmdline += a + "\x00"
		}
		out = append(out, process{pid: pid, ppid: st.PPid, comm: st.Comm, cwd: cwd, cmdline: cmdline})
	}
	return out
}

// memOf reads a process's RSS and PSS.
func memOf(pid int) (rss, pss int64) {
	m, _ := proc.MemoryOf(pid)
	return m.RSS, m.PSS
}

// tree is roots and every process below them.
func tree(roots []int) []process {
	all := allProcs()
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	for changed := true; changed; {
		changed = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid] = true
				changed = true
			}
		}
	}
	var out []process
	for _, p := range all {
		if in[p.pid] {
			p.rss, p.pss = memOf(p.pid)
			out = append(out, p)
		}
	}
	return out
}

type memFigure struct {
	rss, pss int64
	procs    int
	servers  int // gopls processes (not counting gopls's telemetry child)
}

func figure(ps []process) memFigure {
	var m memFigure
	for _, p := range ps {
		m.rss += p.rss
		m.pss += p.pss
		m.procs++
		if p.comm == "gopls" && !strings.Contains(p.cmdline, "telemetry") {
			m.servers++
		}
	}
	return m
}

// memory starts 1, 2 and 4 agents' servers in the workspace, has each
// ask one question, and sums the memory of their process trees (gemkit's
// broker's with them).
func (e *env) memory(res *results) error {
	res.mem = map[string][3]memFigure{}
	for _, which := range []string{"gemkit", "cclsp"} {
		var figs [3]memFigure
		for i, agents := range []int{1, 2, 4} {
			var ss []*server
			for range agents {
				var s *server
				var err error
				if which == "gemkit" {
					s, err = e.startGemkit()
				} else {
					s, err = e.startCclsp()
				}
				if err != nil {
					return err
				}
				ss = append(ss, s)
			}
			for _, s := range ss {
				var text string
				if which == "gemkit" {
					text, _ = s.call("code_references", gemkitRefsByPos)
				} else {
					text, _ = s.call("find_references", cclspRefs)
				}
				if text == "" {
					return fmt.Errorf("%s answered nothing", which)
				}
			}
			// Let the collectors and gopls settle after the answers, then
			// take the median of five samples half a second apart (a Go
			// heap swings with its collections).
			time.Sleep(2 * time.Second)
			var roots []int
			for _, s := range ss {
				roots = append(roots, s.Cmd.Process.Pid)
			}
			if which == "gemkit" {
				roots = append(roots, e.brokers()...)
			}
			var samples []memFigure
			var procs []process
			for k := range 5 {
				if k > 0 {
					time.Sleep(500 * time.Millisecond)
				}
				procs = tree(roots)
				samples = append(samples, figure(procs))
			}
			slices.SortFunc(samples, func(a, b memFigure) int { return int(a.rss - b.rss) })
			figs[i] = samples[len(samples)/2]
			pids := make([]int, len(procs))
			for j, p := range procs {
				pids[j] = p.pid
			}
			// The agents go: each closes its server's stdin, and the
			// processes still running 10 s later are counted (then
			// ended).
			for _, s := range ss {
				s.CloseStdin()
			}
			left := waitGone(pids, 10*time.Second)
			for _, s := range ss {
				s.Close()
			}
			if agents == 2 {
				if which == "gemkit" {
					res.gemkitLeft, res.gemkitLeftWhat = len(left), describe(left)
				} else {
					res.cclspLeft, res.cclspLeftWhat = len(left), describe(left)
				}
			}
			for _, p := range left {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
			if which == "gemkit" {
				if err := e.waitNoBroker(); err != nil {
					return err
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
		res.mem[which] = figs
	}
	return nil
}

// waitGone waits up to max for the processes to end, and returns those
// still running.
func waitGone(pids []int, max time.Duration) []process {
	deadline := time.Now().Add(max)
	for {
		var left []process
		all := allProcs()
		for _, p := range all {
			if slices.Contains(pids, p.pid) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(ps []process) string {
	count := map[string]int{}
	for _, p := range ps {
		name := p.comm
		if name == "gopls" && strings.Contains(p.cmdline, "telemetry") {
			name = "gopls telemetry"
		}
		count[name]++
	}
	var parts []string
	for k, v := range count {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// faults asks both the questions behind the faults issue 31 lists.
func (e *env) faults(res *results) error {
	g, err := e.startGemkit()
	if err != nil {
		return err
	}
	defer func() { g.Close(); e.waitNoBroker() }()
	c, err := e.startCclsp()
	if err != nil {
		return err
	}
	defer func() { c.Close(); e.killLeft() }()
	first := func(s string) string {
		s = strings.TrimSpace(s)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i] + " …"
		}
		if len(s) > 90 {
			s = s[:90] + "…"
		}
		return s
	}
	// Definition from a call site, by name.
	gs, _ := g.call("code_definition", gemkitDefByName)
	cs, _ := c.call("find_definition", map[string]any{"file_path": "main.go", "symbol_name": "Greet"})
	res.faults = append(res.faults, [3]string{"definition of Greet from main.go (a call site), by name", first(strings.SplitN(gs, "\n", 2)[1]), first(cs)})
	// Outside the workspace.
	gs, _ = g.call("code_definition", map[string]any{"symbol": "Println", "file": "main.go"})
	cs, _ = c.call("find_definition", map[string]any{"file_path": "main.go", "symbol_name": "Println"})
	res.faults = append(res.faults, [3]string{"definition of fmt.Println (the standard library)", first(strings.SplitN(gs, "\n", 2)[1]), first(cs)})
	// A file an agent changed: an error written into main.go on disk.
	main := filepath.Join(e.ws, "main.go")
	g.call("code_diagnostics", map[string]any{"file": "main.go"})
	c.call("get_diagnostics", map[string]any{"file_path": "main.go"})
	orig, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(orig), "s.Total()", "s.Totl()", 1)), 0o644)
	gs, _ = g.call("code_diagnostics", map[string]any{"file": "main.go"})
	cs, _ = c.call("get_diagnostics", map[string]any{"file_path": "main.go"})
	res.faults = append(res.faults, [3]string{"diagnostics of main.go after an error was written to it", first(gs), first(cs)})
	os.WriteFile(main, orig, 0o644)
	// Bounded answers.
	gs, _ = g.call("code_references", gemkitRefsByPos)
	cs, _ = c.call("find_references", cclspRefs)
	res.faults = append(res.faults, [3]string{fmt.Sprintf("references to greet.Greet: answer size"), fmt.Sprintf("%d bytes, %s", len(gs), first(lastLine(gs))), fmt.Sprintf("%d bytes", len(cs))})
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func (r *results) print() {
	fmt.Printf("%-58s %-22s %-22s\n", "", "gemkit", "cclsp 0.7.0")
	row := func(name, a, b string) { fmt.Printf("%-58s %-22s %-22s\n", name, a, b) }
	row("start → first correct definition (median)", ms(p50(r.gemkitStart)), ms(p50(r.cclspStart)))
	row("warm definition p50, by position (gemkit) / in the declaring file (cclsp)", ms(p50(r.gemkitDefPos)), ms(p50(r.cclspDef)))
	row("warm definition p50, by name from a call site", ms(p50(r.gemkitDefName)), "(cannot: see below)")
	row("warm references p50, 2 uses (Store.Total)", ms(p50(r.gemkitFew)), ms(p50(r.cclspFew)))
	row("warm references p50, 1,000 uses (greet.Greet)", ms(p50(r.gemkitRefs)), ms(p50(r.cclspRefs)))
	row("  gopls's own definition p50 (asked directly)", ms(p50(r.goplsDef)), "")
	row("  gopls's own references p50, 2 uses", ms(p50(r.goplsFew)), "")
	row("  gopls's own references p50, 1,000 uses", ms(p50(r.goplsRefs)), "")
	row("  MCP round trip p50 (ping): the agent's hop to any server", ms(p50(r.gemkitPing)), ms(p50(r.cclspPing)))
	over := func(a, b []time.Duration) string {
		d := p50(a) - p50(b)
		return fmt.Sprintf("%s (%s beyond ping)", ms(d), ms(d-p50(r.gemkitPing)))
	}
	row("  gemkit's own time over gopls's: definition", over(r.gemkitDefPos, r.goplsDef), "")
	row("  gemkit's own time over gopls's: references, 2 uses", over(r.gemkitFew, r.goplsFew), "")
	row("  gemkit's own time over gopls's: references, 1,000 uses", over(r.gemkitRefs, r.goplsRefs), "")
	row("warm hover p50, by position", ms(p50(r.gemkitHover)), ms(p50(r.cclspHover)))
	row("warm hover p50, by name in the declaring file", ms(p50(r.gemkitHoverName)), "(cannot)")
	row("  gopls's own hover p50 (asked directly)", ms(p50(r.goplsHover)), "")
	row("  gemkit's own time over gopls's: hover by position", over(r.gemkitHover, r.goplsHover), "")
	row("warm implementations p50, by position", ms(p50(r.gemkitImpl)), ms(p50(r.cclspImpl)))
	row("warm implementations p50, by name in the declaring file", ms(p50(r.gemkitImplName)), "(cannot)")
	row("  gopls's own implementations p50 (asked directly)", ms(p50(r.goplsImpl)), "")
	row("  gemkit's own time over gopls's: implementations by position", over(r.gemkitImpl, r.goplsImpl), "")
	for i, agents := range []int{1, 2, 4} {
		g, c := r.mem["gemkit"][i], r.mem["cclsp"][i]
		row(fmt.Sprintf("memory, %d %s: RSS sum / PSS sum", agents, map[bool]string{true: "agent", false: "agents"}[agents == 1]),
			mib(g.rss)+" / "+mib(g.pss), mib(c.rss)+" / "+mib(c.pss))
		row(fmt.Sprintf("  processes / gopls running, %d %s", agents, map[bool]string{true: "agent", false: "agents"}[agents == 1]),
			fmt.Sprintf("%d / %d", g.procs, g.servers), fmt.Sprintf("%d / %d", c.procs, c.servers))
	}
	if len(r.refStart) > 0 {
		row("reference gemkit (-ref): start → first correct definition (median)", ms(p50(r.refStart)), "")
		row("reference gemkit (-ref): warm definition p50, by position", ms(p50(r.refDefPos)), "")
		row("reference gemkit (-ref): warm definition p50, by name", ms(p50(r.refDefName)), "")
		row("  gemkit − reference: start / by position / by name", ms(p50(r.gemkitStart)-p50(r.refStart))+" / "+
			ms(p50(r.gemkitDefPos)-p50(r.refDefPos))+" / "+ms(p50(r.gemkitDefName)-p50(r.refDefName)), "")
	}
	row("left running 10 s after 2 agents closed stdin", fmt.Sprintf("%d %s", r.gemkitLeft, r.gemkitLeftWhat), fmt.Sprintf("%d %s", r.cclspLeft, r.cclspLeftWhat))
	fmt.Println()
	for _, f := range r.faults {
		fmt.Printf("%s\n  gemkit: %s\n  cclsp:  %s\n", f[0], f[1], f[2])
	}
}

// goplsDirect asks gopls directly, each request as lsp/request carries
// it, its answer read as internal/lspsource reads it.
type goplsDirect struct{ c *lspclient.Client }

func (g goplsDirect) ask(ctx context.Context, method string, at codeintel.DocPos, extra string) (json.RawMessage, error) {
	params := fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d}%s}`, lspclient.URI(at.Path), at.Pos.Line, at.Pos.Character, extra)
	return g.c.Request(ctx, method, json.RawMessage(params))
}

func (g goplsDirect) locations(ctx context.Context, method string, at codeintel.DocPos, extra string) ([]codeintel.Location, error) {
	raw, err := g.ask(ctx, method, at, extra)
	if err != nil {
		return nil, err
	}
	return lspclient.DecodeLocations(raw)
}

func (g goplsDirect) Definition(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return g.locations(ctx, "textDocument/definition", at, "")
}

func (g goplsDirect) References(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return g.locations(ctx, "textDocument/references", at, `,"context":{"includeDeclaration":true}`)
}

func (g goplsDirect) Implementations(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return g.locations(ctx, "textDocument/implementation", at, "")
}

func (g goplsDirect) Hover(ctx context.Context, at codeintel.DocPos) (codeintel.Hover, error) {
	raw, err := g.ask(ctx, "textDocument/hover", at, "")
	if err != nil {
		return codeintel.Hover{}, err
	}
	return lspclient.DecodeHover(raw)
}
