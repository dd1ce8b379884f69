//go:build linux

// Command editorsource measures the editor source of gemkit's
// code-intelligence tools: questions answered by the language server the
// editor already runs, through the workspace's companion, against the
// same server asked directly, in the same run, on the same fixture (the
// Go shop of internal/codeintel/codeinteltest).
//
// A real Neovim (headless) runs gopls as its own client (vim.lsp) and
// gemkit's plugin with the gemkit binary built from the repository. The
// questions are asked three ways, warm, -n times each, sequentially:
//
//   - editor source: internal/lspsource with an editor's clients, as gemkit mcp asks (the
//     companion found through its discovery file, POST /lsp with the
//     token, the companion → the plugin on stdio → vim.lsp → gopls);
//   - Neovim's own: the same request from inside Neovim (client.request,
//     timed in Lua from the call to its handler): what the editor's
//     client and gopls take, the part the editor source cannot shorten;
//   - gopls direct: internal/lspclient, what gemkit's own servers use,
//     to a second gopls started for the purpose: gopls's own time.
//
// The relay alone is timed too: lsp/clients, which the plugin answers
// without asking gopls.
//
// Memory: the RSS of Neovim's process tree (Neovim, its gopls, gemkit's
// companion) and the number of gopls processes the editor source runs
// (one: Neovim's), beside the RSS of the second gopls that asking
// gemkit's own servers would start, warm on the same fixture.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
	"github.com/gemkit/gemkit/internal/lspsource"
	"github.com/gemkit/gemkit/internal/nvimrpc"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/editorsource:", err)
		os.Exit(1)
	}
}

type options struct {
	nvim, gemkit, gopls, root string
	n                         int
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("editorsource", flag.ContinueOnError)
	var o options
	benchenv.NeovimFlags(fs, &o.nvim, &o.gemkit, &o.root)
	fs.StringVar(&o.gopls, "gopls", "", "gopls binary (default: the one on $PATH)")
	fs.IntVar(&o.n, "n", 200, "questions of each kind, each way")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := benchenv.NeovimDefaults(&o.nvim, &o.root); err != nil {
		return err
	}
	if o.gopls == "" {
		p, err := exec.LookPath("gopls")
		if err != nil {
			return errors.New("gopls is not on $PATH: GOBIN=/usr/local/bin go install golang.org/x/tools/gopls@v0.23.0")
		}
		o.gopls = p
	}
	dir, err := os.MkdirTemp("", "gemkit-bench-editorsource-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.gemkit == "" {
		if o.gemkit, err = benchenv.BuildGemkit(o.root, dir); err != nil {
			return err
		}
	}
	w, err := newWorld(o, dir)
	if err != nil {
		return err
	}
	ed, err := startEditor(o, w)
	if err != nil {
		return err
	}
	defer ed.close()
	res, err := measure(o, w, ed)
	if err != nil {
		return err
	}
	res.print(out, o)
	return nil
}

// world is the fixture's workspace with a private home and TMPDIR.
type world struct {
	ws, home, tmp string
	env           []string
}

func newWorld(o options, dir string) (*world, error) {
	w := &world{ws: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{w.home, w.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	src := filepath.Join(o.root, "internal", "codeintel", "codeinteltest", "testdata", "go")
	if err := os.CopyFS(w.ws, os.DirFS(src)); err != nil {
		return nil, err
	}
	ws, err := filepath.EvalSymlinks(w.ws)
	if err != nil {
		return nil, err
	}
	w.ws = ws
	// No telemetry process of gopls's own in the memory figures.
	mode := filepath.Join(w.home, ".config", "go", "telemetry", "mode")
	if err := os.MkdirAll(filepath.Dir(mode), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(mode, []byte("off\n"), 0o600); err != nil {
		return nil, err
	}
	w.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + w.tmp, "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(w.home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(w.home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state")}
	if gc := os.Getenv("GOCACHE"); gc != "" {
		w.env = append(w.env, "GOCACHE="+gc)
	}
	return w, nil
}

// editor is Neovim running gopls and gemkit's plugin.
type editor struct {
	cmd *exec.Cmd
	nv  *nvimrpc.Client
}

// initLua starts gopls as Neovim's client for Go files and gemkit's
// plugin, and defines timeit, which times n requests from inside Neovim.
const initLua = `
local gopls, root, plugin, gemkit = %q, %q, %q, %q
vim.api.nvim_create_autocmd('FileType', {
  pattern = 'go',
  callback = function() vim.lsp.start({ name = 'gopls', cmd = { gopls }, root_dir = root }) end,
})
vim.opt.runtimepath:prepend(plugin)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = gemkit })

-- timeit asks method of the client of buf n times, one after the other,
-- and leaves the durations (ns) in _G.timed.
function _G.timeit(buf, method, params, n)
  _G.timed = nil
  local client = vim.lsp.get_clients({ bufnr = buf, name = 'gopls' })[1]
  local out, i = {}, 0
  local function one()
    if i == n then _G.timed = out return end
    i = i + 1
    local t0 = vim.uv.hrtime()
    client.request(method, params, function() table.insert(out, vim.uv.hrtime() - t0); one() end, buf)
  end
  one()
end
`

func startEditor(o options, w *world) (*editor, error) {
	init := filepath.Join(w.home, "init.lua")
	plugin := filepath.Join(o.root, "editors", "nvim")
	if err := os.WriteFile(init, fmt.Appendf(nil, initLua, o.gopls, w.ws, plugin, o.gemkit), 0o600); err != nil {
		return nil, err
	}
	sock := filepath.Join(w.tmp, "nvim.sock")
	cmd := exec.Command(o.nvim, "--headless", "--listen", sock, "-n", "-i", "NONE", "-u", init, filepath.Join(w.ws, "main.go"))
	cmd.Dir, cmd.Env = w.ws, w.env
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &editor{cmd: cmd}
	if err := benchenv.Poll(15*time.Second, 50*time.Millisecond, func() (err error) { e.nv, err = nvimrpc.Dial(sock); return err }); err != nil {
		e.close()
		return nil, fmt.Errorf("neovim's socket: %w", err)
	}
	return e, nil
}

// close quits Neovim (its gopls and companion end with it) and waits.
func (e *editor) close() {
	if e.nv != nil {
		_, _ = e.nv.Call("nvim_command", "qa!")
		e.nv.Close()
	}
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}

func (e *editor) lua(code string, args ...any) (any, error) {
	if args == nil {
		args = []any{}
	}
	return e.nv.Call("nvim_exec_lua", code, args)
}

// timed asks Neovim's own client n times and returns the durations.
func (e *editor) timed(path, method, params string, n int) ([]time.Duration, error) {
	_, err := e.lua(`local path, method, params, n = ...
local buf = vim.fn.bufadd(path)
vim.fn.bufload(buf)
_G.timeit(buf, method, vim.json.decode(params), n)`, path, method, params, n)
	if err != nil {
		return nil, err
	}
	var got []time.Duration
	err = benchenv.Poll(5*time.Minute, 50*time.Millisecond, func() error {
		v, err := e.lua(`return _G.timed and vim.json.encode(_G.timed) or ''`)
		if err != nil {
			return err
		}
		s, _ := v.(string)
		if s == "" {
			return errors.New("still asking")
		}
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '[' || r == ']' || r == ',' }) {
			ns, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return fmt.Errorf("Neovim's timings %q: %w", s, err)
			}
			got = append(got, time.Duration(ns))
		}
		return nil
	})
	return got, err
}

// asker is what both ways of asking answer: the editor source and
// lspclient.
type asker interface {
	Definition(context.Context, codeintel.DocPos) ([]codeintel.Location, error)
	References(context.Context, codeintel.DocPos) ([]codeintel.Location, error)
}

// question is one question, as a codeintel.Source asks it and as LSP
// carries it.
type question struct {
	name, method string
	at           codeintel.DocPos
	ask          func(context.Context, asker, codeintel.DocPos) error
}

type result struct {
	rows      []row
	relay     stat  // gemkit mcp → companion → plugin → back, no server asked
	nvimRSS   int64 // Neovim's process tree
	goplsRSS  int64 // Neovim's gopls alone
	companion int64 // gemkit's companion
	second    int64 // the second gopls, asked directly
	goplsN    int   // gopls processes of the editor source's run
	load      string
}

type row struct {
	name                string
	editor, nvim, gopls stat
}

type stat struct{ p50, min time.Duration }

func summarize(ds []time.Duration) stat {
	if len(ds) == 0 {
		return stat{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return stat{p50: s[len(s)/2], min: s[0]}
}

func measure(o options, w *world, ed *editor) (*result, error) {
	ctx := context.Background()
	main, store := filepath.Join(w.ws, "main.go"), filepath.Join(w.ws, "store", "store.go")
	qs := questions(main, store)

	// The editor source, found as gemkit mcp finds it.
	env := map[string]string{"TMPDIR": w.tmp, "HOME": w.home}
	f := lspsource.NewFinder(w.ws, lspsource.Options{Discovery: client.Options{
		Dir: filepath.Join(w.tmp, "gemini", "ide"), Getenv: func(k string) string { return env[k] },
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}})
	defer f.Close()
	var src codeintel.Source
	if err := benchenv.Poll(60*time.Second, 50*time.Millisecond, func() error {
		if f.Find(ctx) == nil {
			return errors.New("no companion found")
		}
		src = lspsource.New(f.Find, nil)
		// Warm: gopls has loaded the workspace when it answers.
		return qs[0].ask(ctx, src, qs[0].at)
	}); err != nil {
		return nil, fmt.Errorf("the editor source: %w", err)
	}
	// gopls diagnoses the workspace after its first answers: let it.
	time.Sleep(3 * time.Second)

	res := &result{}
	const warm = 20
	// The relay alone: a question the plugin answers without asking
	// gopls (the clients of the workspace).
	var relay []time.Duration
	for i := 0; i < warm+o.n; i++ {
		t0 := time.Now()
		if _, err := src.Status(ctx, ""); err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
		if i >= warm {
			relay = append(relay, time.Since(t0))
		}
	}
	res.relay = summarize(relay)

	// Each way is measured alone: the second gopls starts once the
	// editor's figures are taken, so that its loading takes no CPU from
	// them.
	times := func(a asker, q question) (stat, error) { return timeAsks(ctx, a, q, warm, o.n) }
	for _, q := range qs {
		r := row{name: q.name}
		var err error
		if r.editor, err = times(src, q); err != nil {
			return nil, err
		}
		params := fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d},"context":{"includeDeclaration":true}}`,
			lspclient.URI(q.at.Path), q.at.Pos.Line, q.at.Pos.Character)
		ds, err := ed.timed(q.at.Path, q.method, params, warm+o.n)
		if err != nil {
			return nil, fmt.Errorf("%s in Neovim: %w", q.name, err)
		}
		r.nvim = summarize(ds[warm:])
		res.rows = append(res.rows, r)
	}

	// The second gopls, asked directly, once it is idle.
	direct, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{o.gopls}, Dir: w.ws, Env: w.env})
	if err != nil {
		return nil, err
	}
	defer direct.Shutdown(ctx)
	for _, p := range []string{main, store} {
		if _, err := direct.Open(p, "go"); err != nil {
			return nil, err
		}
	}
	if err := benchenv.Poll(60*time.Second, 50*time.Millisecond, func() error { return qs[0].ask(ctx, goplsDirect{direct}, qs[0].at) }); err != nil {
		return nil, fmt.Errorf("gopls direct: %w", err)
	}
	idle, cancel := context.WithTimeout(ctx, 30*time.Second)
	direct.WaitIdle(idle)
	cancel()
	time.Sleep(time.Second)
	for i, q := range qs {
		if res.rows[i].gopls, err = times(goplsDirect{direct}, q); err != nil {
			return nil, err
		}
	}

	res.addEditorMemory(ed.cmd.Process.Pid)
	res.second, _ = proc.StatusBytes(direct.Pid(), "VmRSS")
	res.load, _ = proc.LoadAverage()
	return res, nil
}

// questions are the two questions asked each way: a definition from a
// use in main, and the references of a method in store.
func questions(main, store string) []question {
	return []question{
		{"definition (Greet, from its use in main.go)", "textDocument/definition",
			codeintel.DocPos{Path: main, Pos: codeintel.Position{Line: 14, Character: 19}},
			func(ctx context.Context, s asker, at codeintel.DocPos) error {
				locs, err := s.Definition(ctx, at)
				if err == nil && len(locs) != 1 {
					err = fmt.Errorf("%d definitions", len(locs))
				}
				return err
			}},
		{"references (Store.Total, in store.go)", "textDocument/references",
			codeintel.DocPos{Path: store, Pos: codeintel.Position{Line: 29, Character: 16}},
			func(ctx context.Context, s asker, at codeintel.DocPos) error {
				locs, err := s.References(ctx, at)
				if err == nil && len(locs) != 2 {
					err = fmt.Errorf("%d references", len(locs))
				}
				return err
			}},
	}
}

// timeAsks asks q of a warm+n times and sums up the last n.
func timeAsks(ctx context.Context, a asker, q question, warm, n int) (stat, error) {
	var ds []time.Duration
	for i := 0; i < warm+n; i++ {
		t0 := time.Now()
		if err := q.ask(ctx, a, q.at); err != nil {
			return stat{}, fmt.Errorf("%s: %w", q.name, err)
		}
		if i >= warm {
			ds = append(ds, time.Since(t0))
		}
	}
	return summarize(ds), nil
}

// addEditorMemory adds up the resident memory of Neovim's process tree:
// all of it, its gopls, and gemkit's companion.
func (r *result) addEditorMemory(pid int) {
	for _, p := range proc.Tree(pid) {
		rss, _ := proc.StatusBytes(p, "VmRSS")
		r.nvimRSS += rss
		switch comm(p) {
		case "gopls":
			r.goplsN++
			r.goplsRSS += rss
		case "gemkit":
			r.companion += rss
		}
	}
}

func (r *result) print(out io.Writer, o options) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	mb := func(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/(1<<20)) }
	fmt.Fprintf(out, "Editor source: warm p50 (min) of %d questions each; load average %s\n\n", o.n, r.load)
	fmt.Fprintln(out, "| question | editor source (gemkit mcp → companion → Neovim → gopls) | Neovim's own client → gopls | gopls direct (lspclient) | editor source − gopls |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for _, row := range r.rows {
		fmt.Fprintf(out, "| %s | %s (%s) | %s (%s) | %s (%s) | %s |\n", row.name,
			ms(row.editor.p50), ms(row.editor.min), ms(row.nvim.p50), ms(row.nvim.min),
			ms(row.gopls.p50), ms(row.gopls.min), ms(row.editor.p50-row.gopls.p50))
	}
	fmt.Fprintf(out, "| the relay alone (lsp/clients: the plugin answers, gopls is not asked) | %s (%s) | | | |\n", ms(r.relay.p50), ms(r.relay.min))
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| memory | editor source | gemkit's own servers would add |")
	fmt.Fprintln(out, "|---|---|---|")
	fmt.Fprintf(out, "| gopls processes for the workspace | %d (Neovim's) | 1 more |\n", r.goplsN)
	fmt.Fprintf(out, "| RSS | Neovim's tree %s (gopls %s, gemkit's companion %s): nothing added | a second gopls, warm: %s (and the broker) |\n",
		mb(r.nvimRSS), mb(r.goplsRSS), mb(r.companion), mb(r.second))
}

func comm(pid int) string {
	st, _ := proc.ReadStat(pid)
	return st.Comm
}

// goplsDirect asks gopls directly, each request as lsp/request carries
// it, its answer read as internal/lspsource reads it.
type goplsDirect struct{ c *lspclient.Client }

func (g goplsDirect) locations(ctx context.Context, method string, at codeintel.DocPos, extra string) ([]codeintel.Location, error) {
	params := fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d}%s}`, lspclient.URI(at.Path), at.Pos.Line, at.Pos.Character, extra)
	raw, err := g.c.Request(ctx, method, json.RawMessage(params))
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
