package editors_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNeovimDiffFiletype: the proposal's filetype (ftplugin, indent,
// syntax) loads just after the diff's first draw, and the diff's own
// window options still win over an ftplugin's, as when the filetype came
// first: a FileType autocommand that sets foldmethod (as many configs do
// for tree-sitter folds) leaves the proposal folded by the diff. The
// companion is a script that says what a real one says first
// (server/ready) and then asks for a diff (diff/open: both shapes as in
// docs/editor-protocol.md), so that only the plugin runs.
func TestNeovimDiffFiletype(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			bin := v.require(t)
			dir := t.TempDir()
			file := filepath.Join(dir, "main.go")
			if err := os.WriteFile(file, []byte("package main\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			companion := filepath.Join(dir, "companion.sh")
			script := "#!/bin/sh\nprintf '%s\\n' '" + `{"jsonrpc":"2.0","method":"server/ready","params":{"port":1,"discoveryFile":"/dev/null"}}` + "' '" +
				`{"jsonrpc":"2.0","id":1,"method":"diff/open","params":{"filePath":"` + file + `","newContent":"package main\n\nfunc main() {}\n","agent":"Claude Code"}}` + "'\nexec cat >/dev/null\n"
			if err := os.WriteFile(companion, []byte(script), 0o700); err != nil {
				t.Fatal(err)
			}
			plugin, err := filepath.Abs("nvim")
			if err != nil {
				t.Fatal(err)
			}
			init := filepath.Join(dir, "init.lua")
			lua := `vim.opt.runtimepath:prepend(` + luaQuote(plugin) + `)
vim.cmd('filetype plugin indent on')
vim.cmd('syntax on')
vim.api.nvim_create_autocmd('FileType', { pattern = 'go', command = 'setlocal foldmethod=indent' })
require('gemkit').setup({ cmd = ` + luaQuote(companion) + ` })
local path = ` + luaQuote(file) + `
local tries = 0
local function check()
  tries = tries + 1
  local d = require('gemkit').state().diffs[path]
  local ok = d ~= nil and vim.api.nvim_buf_is_valid(d.right) and vim.bo[d.right].filetype == 'go'
  if not ok and tries < 1000 then
    return vim.defer_fn(check, 20)
  end
  local out = { ok = ok }
  if d then
    local w = vim.fn.win_findbuf(d.right)[1]
    out.filetype, out.left_syntax = vim.bo[d.right].filetype, vim.bo[d.left].syntax
    out.left_filetype = vim.bo[d.left].filetype
    if w then
      out.diff, out.foldmethod = vim.wo[w].diff, vim.wo[w].foldmethod
    end
  end
  io.stdout:write(vim.json.encode(out), '\n')
  vim.cmd('qa!')
end
vim.defer_fn(check, 20)
`
			if err := os.WriteFile(init, []byte(lua), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--headless", "-n", "-i", "NONE", "-u", init, file)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
				"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
			b, err := cmd.CombinedOutput()
			out := string(b)
			if err != nil {
				t.Fatalf("nvim: %v\n%s", err, out)
			}
			for _, want := range []string{`"ok":true`, `"filetype":"go"`, `"left_syntax":"go"`, `"left_filetype":""`, `"diff":true`, `"foldmethod":"diff"`} {
				if !strings.Contains(out, want) {
					t.Errorf("the diff view lacks %s: %s", want, out)
				}
			}
		})
	}
}

// luaQuote is s as a Lua string literal.
func luaQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
