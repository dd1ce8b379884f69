// Command mcp measures `gemkit mcp` with 50 installed extensions of 5
// tools each (issue #8's targets): tools/list from process start (fork+exec
// of `gemkit mcp`, initialize, initialized, tools/list, answer read but not
// yet decoded), beside
// the whole process of `gemkit extensions list --json` over the same
// extensions; tools/list again on a running server; and a tool call through
// `gemkit mcp` beside a direct `gemkit extensions run` of the same tool and
// beside the same runner (internal/toolrun) called in this process,
// interleaved so all three see the same load.
//
//	go run ./bench/mcp [-n 100] [-starts 30] [-extensions 50] [-tools 5]
//
// The client is bench/internal/mcpline, so its cost is the same for every
// figure.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/bench/internal/mcpline"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/proc"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

func main() {
	// The in-process runner re-executes gemkit as the sandbox child, but a
	// copy of this program would do too.
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	n := flag.Int("n", 100, "warm tools/list requests and tool calls of each kind")
	starts := flag.Int("starts", 30, "process starts for the cold figures")
	exts := flag.Int("extensions", 50, "installed extensions")
	tools := flag.Int("tools", 5, "tools per extension")
	flag.Parse()
	if err := run(*n, *starts, *exts, *tools); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(n, starts, exts, tools int) error {
	tmp, err := os.MkdirTemp("", "gemkit-bench-mcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	bin := filepath.Join(tmp, "gemkit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gemkit")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // the static binary gemkit ships as
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build gemkit: %w", err)
	}

	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "work")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	if err := install(st, filepath.Join(tmp, "src"), exts, tools); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+home)
	fmt.Printf("%s/%s, %d CPUs; %d extensions x %d tools installed\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), exts, tools)
	fmt.Printf("load average before: %s\n", loadAverage())
	defer func() { fmt.Printf("load average after:  %s\n", loadAverage()) }()

	// The extensions' tools only, as before the code-intelligence tools
	// came (bench/codeintel measures those).
	mcpArgs := []string{"mcp", "--home", home, "--workspace", ws, "--code-intel=false"}
	want := exts*tools + 1 // and read_doc

	// tools/list from process start, beside `extensions list --json`.
	cold, list, err := coldLists(bin, mcpArgs, env, home, ws, starts, want)
	if err != nil {
		return err
	}

	s, err := startServer(bin, mcpArgs, env)
	if err != nil {
		return err
	}
	defer s.Close()
	// The same request in protocol 2026-07-28 (as Claude Code sends it:
	// the revision in the request's _meta), interleaved.
	var warm, warmModern []time.Duration
	for range n {
		start := time.Now()
		if _, err := s.listTools(nil); err != nil {
			return err
		}
		warm = append(warm, s.Read.Sub(start))
		start = time.Now()
		if got, err := s.listTools(modernMeta); err != nil || got != want {
			return fmt.Errorf("tools/list in 2026-07-28: %d tools, %v", got, err)
		}
		warmModern = append(warmModern, s.Read.Sub(start))
	}

	// One tool, three ways, interleaved.
	viaMCP, viaRun, inProc, err := toolCalls(s, st, bin, env, home, ws, n)
	if err != nil {
		return err
	}

	row := func(name string, d []time.Duration, note string) {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("%-44s p50 %7.2f ms  p90 %7.2f ms  %s\n", name, ms(pct(d, 50)), ms(pct(d, 90)), note)
	}
	fmt.Println()
	row("tools/list from process start", cold, "target <= 20 ms")
	row("  beside: extensions list --json (process)", list, "same extensions, whole process")
	row("tools/list warm", warm, "target <= 2 ms")
	row("tools/list warm, protocol 2026-07-28", warmModern, "")
	row("tool call through gemkit mcp", viaMCP, "")
	row("  beside: gemkit extensions run (process)", viaRun, "")
	row("  beside: toolrun in process (no MCP)", inProc, "")
	over := pct(viaMCP, 50) - pct(inProc, 50)
	fmt.Printf("\noverhead of gemkit mcp over the same runner, p50: %.2f ms (target <= 2 ms)\n", ms(over))
	fmt.Printf("gemkit mcp call minus gemkit extensions run, p50: %.2f ms (negative: the server saves the process start)\n", ms(pct(viaMCP, 50)-pct(viaRun, 50)))
	return nil
}

// coldLists times tools/list from the process start of gemkit mcp,
// starts times, beside `extensions list --json` as a whole process.
func coldLists(bin string, mcpArgs, env []string, home, ws string, starts, want int) (cold, list []time.Duration, err error) {
	for range starts {
		start := time.Now()
		s, err := startServer(bin, mcpArgs, env)
		if err != nil {
			return nil, nil, err
		}
		got, err := s.listTools(nil)
		d := s.Read.Sub(start)
		s.Close()
		if err != nil {
			return nil, nil, err
		}
		if got != want {
			return nil, nil, fmt.Errorf("tools/list gave %d tools, want %d", got, want)
		}
		cold = append(cold, d)

		cmd := exec.Command(bin, "extensions", "--home", home, "--workspace", ws, "list", "--json")
		cmd.Env = env
		start = time.Now()
		if err := cmd.Run(); err != nil {
			return nil, nil, fmt.Errorf("extensions list: %w", err)
		}
		list = append(list, time.Since(start))
	}
	return cold, list, nil
}

// toolCalls times one tool n times three ways, interleaved: through
// gemkit mcp, as `gemkit extensions run`, and with toolrun in process.
func toolCalls(s *server, st *extension.Store, bin string, env []string, home, ws string, n int) (viaMCP, viaRun, inProc []time.Duration, err error) {
	in, err := st.Get("bench-ext-000")
	if err != nil {
		return nil, nil, nil, err
	}
	runner := &toolrun.Runner{Launcher: &sandbox.Launcher{Exe: bin}, Consent: st, Installed: st, Environ: env, Protected: []string{filepath.Dir(st.Dir())}}
	for range n {
		start := time.Now()
		text, err := s.call("bench-ext-000_tool0")
		if err != nil {
			return nil, nil, nil, err
		}
		if text != "ok\n" {
			return nil, nil, nil, fmt.Errorf("the tool answered %q through gemkit mcp", text)
		}
		viaMCP = append(viaMCP, time.Since(start))

		cmd := exec.Command(bin, "extensions", "--home", home, "--workspace", ws, "run", "bench-ext-000", "tool0")
		cmd.Env = env
		start = time.Now()
		if out, err := cmd.Output(); err != nil || string(out) != "ok\n" {
			return nil, nil, nil, fmt.Errorf("extensions run: %v %q", err, out)
		}
		viaRun = append(viaRun, time.Since(start))

		start = time.Now()
		res, err := runner.Run(context.Background(), toolrun.Call{Extension: in.Extension, Tool: "tool0", Workspace: ws})
		if err != nil || res.Text != "ok\n" {
			return nil, nil, nil, fmt.Errorf("in-process run: %v", err)
		}
		inProc = append(inProc, time.Since(start))
	}
	return viaMCP, viaRun, inProc, nil
}

// install creates and installs count extensions of tools tools each, with
// consent.
func install(st *extension.Store, srcRoot string, count, tools int) error {
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	for i := range count {
		name := fmt.Sprintf("bench-ext-%03d", i)
		src := filepath.Join(srcRoot, name)
		if err := os.MkdirAll(filepath.Join(src, "tools"), 0o755); err != nil {
			return err
		}
		var ts []string
		for j := range tools {
			ts = append(ts, fmt.Sprintf(`{"name": "tool%d", "description": "Tool %d of %s: does one thing with a file.", "executable": "tools/t.sh", "runtime": "shell",
			 "args": [{"name": "file", "type": "string", "description": "The file."}, {"name": "verbose", "type": "boolean"}, {"name": "tags", "type": "array"}]}`, j, j, name))
		}
		// tool0 takes no arguments, so every way of calling it is the same.
		ts[0] = `{"name": "tool0", "description": "Prints ok.", "executable": "tools/ok.sh", "runtime": "shell"}`
		manifest := fmt.Sprintf(`{"name": %q, "version": "1.0.0", "description": "Benchmark extension %d.",
		 "permissions": {"filesystem": {"read": "workspace"}},
		 "tools": [%s],
		 "docs": [{"name": "guide", "description": "The guide.", "file": "guide.md"}],
		 "examples": [{"prompt": "do it", "tool_call": "tool1(file=\"a\")"}]}`, name, i, strings.Join(ts, ",\n"))
		files := map[string]string{"gemini-extension.json": manifest, "tools/t.sh": "echo done\n", "tools/ok.sh": "echo ok\n", "guide.md": "# Guide\n"}
		for rel, body := range files {
			if err := os.WriteFile(filepath.Join(src, rel), []byte(body), 0o755); err != nil {
				return err
			}
		}
		if _, err := st.Install(context.Background(), extension.InstallRequest{Source: src, Consent: yes}); err != nil {
			return err
		}
	}
	return nil
}

// server is a running `gemkit mcp` with a stdio client.
type server struct{ *mcpline.Conn }

func startServer(bin string, args, env []string) (*server, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	c, err := mcpline.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &server{c}, nil
}

// modernMeta is the _meta of a request in protocol 2026-07-28.
var modernMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "1"},
}

// listTools asks for the tool list, with meta as the request's _meta
// when it is not nil, and returns how many tools it got.
func (s *server) listTools(meta map[string]any) (int, error) {
	params := map[string]any{}
	if meta != nil {
		params["_meta"] = meta
	}
	raw, err := s.Request("tools/list", params)
	if err != nil {
		return 0, err
	}
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	err = json.Unmarshal(raw, &r)
	return len(r.Tools), err
}

func (s *server) call(name string) (string, error) {
	text, isErr, err := s.Call(name, nil)
	if err != nil {
		return "", err
	}
	if isErr {
		return "", fmt.Errorf("tools/call failed: %s", text)
	}
	return text, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), sorted...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return s[i-1]
}

func loadAverage() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "unknown"
	}
	return l
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
