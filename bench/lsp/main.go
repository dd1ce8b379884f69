// Command lsp measures, with the real Neovim on the other end, what a
// proposed change costs to show through `gemkit ide serve --editor lsp`
// (Neovim's built-in LSP client, the proposal applied to the buffer)
// against the gemkit Neovim plugin (`--editor stdio`, a diff view), in the
// same run: a Go client's openDiff (client StartDiff) until the
// companion answers it, which it does once the editor has the proposal on
// screen (the plugin answers diff/open once its view is up; the LSP
// client answers workspace/applyEdit once the buffer holds the proposal);
// then closeDiff, before the next. And a cursor move, typed into Neovim
// (nvim_input), until the Go client receives the ide/contextUpdate that
// carries it, with the companion's debounce at 1 ms in both (so the
// figure is what each path costs beyond the debounce): the plugin reports
// on CursorMoved; the built-in client sends textDocument/documentHighlight
// from a CursorMoved autocommand (docs/lsp.md's CursorHold one, without
// 'updatetime”s wait, which is the user's to set).
//
//	go run ./bench/lsp          # 200 diffs and 200 cursor moves each
//	go run ./bench/lsp -quick   # 20 of each
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/nvimrpc"
)

const fileA = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"

// lspInit is docs/lsp.md's Neovim configuration without
// window.showMessage in the client's capabilities: its prompt would wait
// for a person between two diffs.
const lspInit = `
local caps = vim.lsp.protocol.make_client_capabilities()
caps.window.showMessage = nil
local gemkit = vim.lsp.start_client({
  name = 'gemkit',
  cmd = { %q, 'ide', 'serve', '--editor', 'lsp', '--debounce', '1ms' },
  root_dir = vim.fn.getcwd(),
  capabilities = caps,
})
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
  callback = function(args) vim.lsp.buf_attach_client(args.buf, gemkit) end,
})
vim.api.nvim_create_autocmd('CursorMoved', {
  callback = function() pcall(vim.lsp.buf.document_highlight) end,
})
`

// pluginInit loads editors/nvim as docs/editors.md says.
const pluginInit = `vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = %q, args = { '--debounce', '1ms' } })
`

func main() {
	n := flag.Int("diffs", 200, "diffs per front-end")
	quick := flag.Bool("quick", false, "20 diffs per front-end, to check it works")
	flag.Parse()
	if *quick {
		*n = 20
	}
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "bench/lsp:", err)
		os.Exit(1)
	}
}

func run(n int) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		return errors.New("nvim not found (Debian: neovim)")
	}
	tmp, err := os.MkdirTemp("", "bench-lsp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "gemkit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gemkit")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build gemkit: %v\n%s", err, out)
	}
	fronts := []struct{ name, init string }{
		{"plugin (--editor stdio)", fmt.Sprintf(pluginInit, filepath.Join(root, "editors", "nvim"), bin)},
		{"built-in LSP client (--editor lsp)", fmt.Sprintf(lspInit, bin)},
	}
	results := make([]figures, len(fronts))
	for i, f := range fronts {
		r, err := measure(tmp, nvim, f.init, n)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		results[i] = r
	}
	fmt.Printf("openDiff → answered once shown in Neovim, then closeDiff; %d diffs each\n", n)
	for i, f := range fronts {
		printQuantiles(f.name, results[i].diff)
	}
	fmt.Printf("cursor move typed in Neovim → ide/contextUpdate at the client (debounce 1 ms); %d moves each\n", n)
	for i, f := range fronts {
		printQuantiles(f.name, results[i].cursor)
	}
	return nil
}

// figures are one front-end's latencies.
type figures struct{ diff, cursor []time.Duration }

func printQuantiles(name string, lat []time.Duration) {
	slices.Sort(lat)
	fmt.Printf("  %-36s p50 %6.2f ms   p90 %6.2f ms\n", name, ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]))
}

// measure runs one Neovim with init and times n diffs of a.go, then n
// cursor moves in it.
func measure(tmp, nvim, init string, n int) (figures, error) {
	var f figures
	dir, err := os.MkdirTemp(tmp, "run-")
	if err != nil {
		return f, err
	}
	ws, home, private := filepath.Join(dir, "ws"), filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{ws, home, private} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return f, err
		}
	}
	a := filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte(fileA), 0o644); err != nil {
		return f, err
	}
	initPath := filepath.Join(home, "init.lua")
	if err := os.WriteFile(initPath, []byte(init), 0o600); err != nil {
		return f, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sock := filepath.Join(dir, "nvim.sock")
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--listen", sock, "-n", "-i", "NONE", "-u", initPath, a)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "HOME="+home, "TMPDIR="+private, "XDG_CONFIG_HOME="+home, "XDG_STATE_HOME="+home, "XDG_CACHE_HOME="+home, "XDG_DATA_HOME="+home)
	if err := cmd.Start(); err != nil {
		return f, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	discDir := filepath.Join(private, "gemini", "ide")
	var c *client.Client
	deadline := time.Now().Add(30 * time.Second)
	for c == nil {
		ents, _ := os.ReadDir(discDir)
		for _, e := range ents {
			if _, _, ok := discovery.ParseFileName(e.Name()); ok {
				c, _, err = client.Connect(ctx, client.Options{Cwd: ws, Dir: discDir, IDEPID: cmd.Process.Pid, Getenv: func(string) string { return "" }, Host: "127.0.0.1"})
				if err != nil {
					return f, err
				}
			}
		}
		if time.Now().After(deadline) {
			return f, errors.New("no discovery file from Neovim's companion")
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close(ctx)
	for i := range n {
		start := time.Now()
		pd, err := c.StartDiff(ctx, a, fmt.Sprintf("%s// %d\n", fileA, i))
		if err != nil {
			return f, err
		}
		f.diff = append(f.diff, time.Since(start))
		if _, _, err := c.CloseDiff(ctx, a); err != nil {
			return f, err
		}
		pd.Abandon()
		time.Sleep(20 * time.Millisecond) // the buffer restored, the view closed
	}
	f.cursor, err = cursorMoves(ctx, c, sock, a, n)
	return f, err
}

// cursorMoves types nG into Neovim n times, between lines 3 and 5 of a.go,
// and times each until the client's context has the cursor there.
func cursorMoves(ctx context.Context, c *client.Client, sock, path string, n int) ([]time.Duration, error) {
	rpc, err := nvimrpc.Dial(sock)
	if err != nil {
		return nil, err
	}
	defer rpc.Close()
	lines := make(chan int, 64)
	remove := c.OnContext(func(v *ide.Context) {
		if v == nil || v.WorkspaceState == nil {
			return
		}
		for _, file := range v.WorkspaceState.OpenFiles {
			if file.IsActive && file.Path == path && file.Cursor != nil {
				select {
				case lines <- file.Cursor.Line:
				default:
				}
			}
		}
	})
	defer remove()
	var lat []time.Duration
	for i := range n {
		line := 3 + 2*(i%2)
		time.Sleep(20 * time.Millisecond) // the previous move's updates delivered
		for len(lines) > 0 {
			<-lines
		}
		start := time.Now()
		if _, err := rpc.Call("nvim_input", fmt.Sprintf("%dG", line)); err != nil {
			return nil, err
		}
		timeout := time.After(10 * time.Second)
		for got := 0; got != line; {
			select {
			case got = <-lines:
			case <-timeout:
				return nil, fmt.Errorf("move %d: no context update with the cursor on line %d", i, line)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
