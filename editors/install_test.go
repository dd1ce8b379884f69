package editors_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// installBlock is the code block docs/editors.md marks with
// <!-- install-test: name -->, read from the docs so that what is tested
// is what a person copies, with /path/to/gemkit made this repository.
func installBlock(t *testing.T, name string) (lang, block string) {
	t.Helper()
	root := gemkittest.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "editors.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- install-test: " + regexp.QuoteMeta(name) + " -->\n```(\\w+)\n(.*?\n)```\n").FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/editors.md has no block marked install-test: %s", name)
	}
	if !strings.Contains(string(m[2]), "/path/to/gemkit") {
		t.Fatalf("docs/editors.md's %s block names no /path/to/gemkit:\n%s", name, m[2])
	}
	return string(m[1]), strings.ReplaceAll(string(m[2]), "/path/to/gemkit", root)
}

// The plugin managers are not packaged where the tests run (no Debian or
// npm package), so each is a stand-in doing, for a plugin in a local
// folder, what the manager's own source does; the snippets were also run
// with the real managers by hand (lazy.nvim 306a055, vim-plug 88e3147,
// packer.nvim ea0cc3c). Each records the name it gives the plugin.

// lazyStandIn is lazy.nvim's setup for a spec with dir (folke/lazy.nvim
// lua/lazy/core/plugin.lua: the name is the spec's name, else the folder's
// last part; lua/lazy/core/loader.lua: a plugin that is not lazy is added
// to the runtimepath, its plugin/ files sourced, then config(plugin,
// opts) called).
const lazyStandIn = `local M = { names = {} }
function M.setup(spec)
  for _, p in ipairs(spec) do
    table.insert(M.names, p.name or vim.fn.fnamemodify(p.dir, ':t'))
    vim.opt.runtimepath:append(p.dir)
    for _, f in ipairs(vim.fn.glob(p.dir .. '/plugin/**/*.{vim,lua}', false, true)) do
      vim.cmd('source ' .. vim.fn.fnameescape(f))
    end
    if p.config then p.config(p, {}) end
  end
end
return M
`

// plugStandIn is vim-plug's (junegunn/vim-plug plug.vim: plug#begin
// defines :Plug; plug#() names a plugin by its 'as' option, else the
// last part of its path, which for a local folder is used in place;
// plug#end puts the folders at the front of 'runtimepath', so that Vim's
// start-up, after the vimrc, sources their plugin/ files).
const plugStandIn = `let g:plugs = {}
let s:dirs = []
function! plug#begin(...) abort
  command! -nargs=+ -bar Plug call plug#(<args>)
endfunction
function! plug#(repo, ...) abort
  let opts = a:0 ? a:1 : {}
  let g:plugs[get(opts, 'as', fnamemodify(a:repo, ':t'))] = {'dir': a:repo}
  call add(s:dirs, a:repo)
endfunction
function! plug#end() abort
  delcommand Plug
  for d in s:dirs
    execute 'set runtimepath^=' . fnameescape(d)
  endfor
endfunction
`

// packerStandIn is packer.nvim's, as :PackerSync leaves it (wbthomason/
// packer.nvim lua/packer.lua and lua/packer/plugin_types/local.lua: a
// local plugin is linked as pack/packer/start/<as, else the folder's last
// part>, which Neovim loads after the config; the compiled loader,
// plugin/packer_compiled.lua, then runs each config).
const packerStandIn = `local M = { names = {} }
function M.startup(fn)
  fn(function(spec)
    if type(spec) == 'string' then spec = { spec } end
    local name = spec.as or vim.fn.fnamemodify(spec[1], ':t')
    table.insert(M.names, name)
    local start = vim.fn.stdpath('data') .. '/site/pack/packer/start/'
    vim.fn.mkdir(start, 'p')
    if vim.fn.isdirectory(start .. name) == 0 then vim.loop.fs_symlink(spec[1], start .. name) end
    if spec.config then
      vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() spec.config() end })
    end
  end)
end
return M
`

// TestNeovimInstall installs gemkit.nvim each way docs/editors.md gives,
// in a fresh home (the docs' own lines), on each Neovim release the
// manager supports: Neovim then starts gemkit, finds :help gemkit, and
// the plugin manager names the plugin gemkit.
func TestNeovimInstall(t *testing.T) {
	t.Parallel()
	for _, way := range []struct {
		name   string
		onlyOf string // the one release the manager supports, if any
	}{
		{name: "nvim-rtp"}, {name: "nvim-pack"}, {name: "nvim-lazy", onlyOf: "0.10"}, {name: "nvim-plug"}, {name: "nvim-packer"},
	} {
		for _, v := range neovims {
			if way.onlyOf != "" && v.version != way.onlyOf {
				continue
			}
			t.Run(way.name+"/"+v.version, func(t *testing.T) {
				t.Parallel()
				testNeovimInstall(t, v, way.name)
			})
		}
	}
}

func testNeovimInstall(t *testing.T, v neovim, way string) {
	bin := v.require(t)
	h := newHarness(t)
	lang, block := installBlock(t, way)
	config := filepath.Join(h.home, ".config", "nvim")
	data := filepath.Join(h.home, ".local", "share", "nvim")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	manager := ""
	switch way {
	case "nvim-rtp":
		write(filepath.Join(config, "init.lua"), block)
	case "nvim-pack":
		runShell(t, h, lang, block)
		write(filepath.Join(config, "init.lua"), "require('gemkit').setup({})\n")
	case "nvim-lazy":
		write(filepath.Join(data, "lazy", "lazy.nvim", "lua", "lazy", "init.lua"), lazyStandIn)
		write(filepath.Join(config, "init.lua"), "vim.opt.rtp:prepend(vim.fn.stdpath('data') .. '/lazy/lazy.nvim')\nrequire('lazy').setup({\n"+block+"})\n")
		manager = "return vim.json.encode(require('lazy').names)"
	case "nvim-plug":
		write(filepath.Join(data, "site", "autoload", "plug.vim"), plugStandIn)
		write(filepath.Join(config, "init.vim"), block)
		manager = "return vim.json.encode(vim.tbl_keys(vim.g.plugs))"
	case "nvim-packer":
		write(filepath.Join(data, "site", "pack", "packer", "start", "packer.nvim", "lua", "packer.lua"), packerStandIn)
		write(filepath.Join(config, "init.lua"), block)
		manager = "return vim.json.encode(require('packer').names)"
	}
	if want := map[string]string{"nvim-pack": "sh", "nvim-plug": "vim"}[way]; lang != want && !(want == "" && lang == "lua") {
		t.Fatalf("docs/editors.md's %s block is %s", way, lang)
	}

	// Neovim as a person starts it: its own init file, found in the
	// home; gemkit on PATH.
	sock := filepath.Join(h.tmp, "nvim.sock")
	cmd := exec.Command(bin, "--headless", "--listen", sock, "-n", "-i", "NONE")
	cmd.Dir = h.ws
	cmd.Env = withGemkitOnPath(t, h.env())
	exited := startProcess(t, cmd)
	var rpc *nvimRPC
	waitFor(t, "nvim's RPC socket", func() bool {
		var err error
		rpc, err = dialNvim(sock)
		return err == nil
	})
	t.Cleanup(func() { rpc.Close() })
	d := &nvimDriver{rpc: rpc, pid: cmd.Process.Pid, exited: exited}
	waitFor(t, "gemkit serving (the terminal variables set)", func() bool { return d.Getenv(t, "CLAUDE_CODE_SSE_PORT") != "" })
	d.command(t, "help gemkit")
	name, _ := d.lua(t, `return vim.json.encode(vim.api.nvim_buf_get_name(0))`).(string)
	sameFile(t, name, "nvim/doc/gemkit.txt")
	if manager != "" {
		if got := fmt.Sprint(d.lua(t, manager)); got != "[gemkit]" {
			t.Errorf("the plugin manager names the plugin %s, want gemkit", got)
		}
	}
}

// TestVimInstall installs gemkit.vim each way docs/editors.md gives, in a
// fresh home: Vim then finds :help gemkit and, with vim-plug, names the
// plugin gemkit.
func TestVimInstall(t *testing.T) {
	t.Parallel()
	for _, way := range []string{"vim-pack", "vim-plug"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			bin := requireEditor(t, "vim", "vim-nox")
			h := newHarness(t)
			lang, block := installBlock(t, way)
			vimrc := filepath.Join(h.home, ".vimrc")
			if way == "vim-pack" {
				if lang != "sh" {
					t.Fatalf("docs/editors.md's %s block is %s", way, lang)
				}
				runShell(t, h, lang, block)
				if err := os.WriteFile(vimrc, []byte("let g:gemkit_autostart = 0\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				plug := filepath.Join(h.home, ".vim", "autoload", "plug.vim")
				if err := os.MkdirAll(filepath.Dir(plug), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(plug, []byte(plugStandIn), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(vimrc, []byte("let g:gemkit_autostart = 0\n"+block), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(h.tmp, "vim-out")
			// -es reads no vimrc unless -u names it.
			cmd := exec.Command(bin, "-N", "-u", vimrc, "-i", "NONE", "-es",
				"-c", "help gemkit",
				"-c", "call writefile([expand('%:p'), string(sort(keys(get(g:, 'plugs', {}))))], "+vimString(out)+")", "-c", "qa!")
			cmd.Dir = h.ws
			cmd.Env = withGemkitOnPath(t, h.env())
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("vim: %v\n%s", err, b)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(got)), "\n")
			sameFile(t, lines[0], "vim/doc/gemkit.txt")
			if way == "vim-plug" && lines[1] != "['gemkit']" {
				t.Errorf("vim-plug names the plugin %s, want gemkit", lines[1])
			}
		})
	}
}

// runShell runs a docs' sh block with sh in h's fresh home.
func runShell(t *testing.T, h *harness, lang, block string) {
	t.Helper()
	if lang != "sh" {
		t.Fatalf("a %s block, not sh", lang)
	}
	cmd := exec.Command("sh", "-e", "-c", block)
	cmd.Dir = h.ws
	cmd.Env = h.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/editors.md's lines, in a fresh home:\n%s\nfailed: %v\n%s", block, err, out)
	}
}

// withGemkitOnPath puts the test's gemkit first on env's PATH, as a
// person's installed one is.
func withGemkitOnPath(t *testing.T, env []string) []string {
	dir := filepath.Dir(gemkittest.Gemkit(t))
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + dir + string(os.PathListSeparator) + v
			return env
		}
	}
	return append(env, "PATH="+dir)
}
