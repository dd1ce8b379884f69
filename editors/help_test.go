package editors_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// helpTagsCmd generates doc/tags with each editor's own :helptags.
var helpTagsCmd = map[string]func(bin, dir string) *exec.Cmd{
	"nvim": func(bin, dir string) *exec.Cmd {
		return exec.Command(bin, "--headless", "-u", "NONE", "-i", "NONE", "-c", "helptags "+escapeEx(dir), "-c", "qa!")
	},
	"vim": func(bin, dir string) *exec.Cmd {
		return exec.Command(bin, "-N", "-u", "NONE", "-i", "NONE", "-es", "-c", "helptags "+escapeEx(dir), "-c", "qa!")
	},
}

// TestHelpTagsCurrent checks the doc/tags shipped beside each help file:
// a pack/*/start or plugin-manager install has no other, so without it
// :help gemkit fails, and :helptags there would leave an untracked file.
func TestHelpTagsCurrent(t *testing.T) {
	for _, tt := range []struct{ editor, pkg, dir string }{
		{"nvim", "neovim", "nvim/doc"},
		{"vim", "vim-nox", "vim/doc"},
	} {
		t.Run(tt.editor, func(t *testing.T) {
			bin := requireEditor(t, tt.editor, tt.pkg)
			tmp := t.TempDir()
			txt, err := os.ReadFile(filepath.Join(tt.dir, "gemkit.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, "gemkit.txt"), txt, 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := helpTagsCmd[tt.editor](bin, tmp).CombinedOutput(); err != nil {
				t.Fatalf("helptags: %v\n%s", err, out)
			}
			want, err := os.ReadFile(filepath.Join(tmp, "tags"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(tt.dir, "tags"))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("editors/%s/tags is not what :helptags makes of gemkit.txt (%v): run `%s -u NONE -c 'helptags editors/%s' -c q` and commit it\nwant:\n%s", tt.dir, err, tt.editor, tt.dir, want)
			}
		})
	}
}

// packInstall links dir into a fresh packpath as pack/gemkit/start/gemkit,
// as the docs tell a person to, and returns the packpath.
func packInstall(t *testing.T, h *harness, dir string) string {
	t.Helper()
	plugin, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	pp := filepath.Join(h.home, "pack-"+filepath.Base(dir))
	start := filepath.Join(pp, "pack", "gemkit", "start")
	if err := os.MkdirAll(start, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(plugin, filepath.Join(start, "gemkit")); err != nil {
		t.Fatal(err)
	}
	return pp
}

// TestNeovimPackHelpHealth installs gemkit.nvim as a package: :help gemkit
// opens its help, and :checkhealth gemkit reports the binary, the
// companion serving, its discovery file and Claude Code's lock file.
func TestNeovimPackHelpHealth(t *testing.T) {
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) { testNeovimPackHelpHealth(t, v.require(t)) })
	}
}

func testNeovimPackHelpHealth(t *testing.T, bin string) {
	h := newHarness(t)
	pp := packInstall(t, h, "nvim")
	d := startNvimWith(t, h, bin, fmt.Sprintf("vim.o.packpath = %q\nrequire('gemkit').setup({ cmd = %q })\n", pp, gemkittest.Gemkit(t)))
	waitFor(t, "the plugin's server/ready", func() bool { return d.Getenv(t, "CLAUDE_CODE_SSE_PORT") != "" })

	d.command(t, "help gemkit")
	name, _ := d.lua(t, `return vim.json.encode(vim.api.nvim_buf_get_name(0))`).(string)
	sameFile(t, name, "nvim/doc/gemkit.txt")
	d.command(t, "close")

	d.command(t, "checkhealth gemkit")
	report, _ := d.lua(t, `return vim.json.encode(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n'))`).(string)
	report = strings.ReplaceAll(report, "- OK: ", "- OK ") // Neovim 0.7's form; 0.10 has no colon
	for _, want := range []string{
		"- OK " + gemkittest.Gemkit(t) + ": gemkit version",
		"- OK serving Gemini CLI on 127.0.0.1:",
		"- OK discovery file: " + h.discoveryDir,
		"- OK lock file: " + filepath.Join(h.home, ".qwen", "ide"),
		"- OK serving Claude Code on 127.0.0.1:",
		"lock file: " + filepath.Join(h.home, ".claude", "ide"),
	} {
		if !strings.Contains(report, want) {
			t.Errorf(":checkhealth gemkit lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "ERROR") || strings.Contains(report, "WARNING") {
		t.Errorf(":checkhealth gemkit reports a problem:\n%s", report)
	}
	// No Gemini CLI settings yet: it says what gemini will ask first and
	// what to answer; once IDE mode is on, that it is.
	if !strings.Contains(report, "IDE mode is not on in "+filepath.Join(h.home, ".gemini", "settings.json")) || !strings.Contains(report, "answer 3") {
		t.Errorf(":checkhealth gemkit does not tell of Gemini CLI's first question:\n%s", report)
	}
	d.command(t, "close")
	writeGeminiSettings(t, h.home)
	d.command(t, "checkhealth gemkit")
	report, _ = d.lua(t, `return vim.json.encode(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n'))`).(string)
	if !strings.Contains(report, "IDE mode is on") {
		t.Errorf(":checkhealth gemkit with IDE mode on:\n%s", report)
	}
	noDeprecations(t, h)
}

// TestVimPackHelp installs gemkit.vim as a package: :help gemkit opens its
// help.
func TestVimPackHelp(t *testing.T) {
	bin := requireEditor(t, "vim", "vim-nox")
	h := newHarness(t)
	pp := packInstall(t, h, "vim")
	out := filepath.Join(h.tmp, "help-buffer")
	cmd := exec.Command(bin, "-N", "-u", "NONE", "-i", "NONE", "-es",
		"--cmd", "set packpath="+escapeEx(pp), "-c", "packloadall", "-c", "help gemkit",
		"-c", "call writefile([expand('%:p')], "+vimString(out)+")", "-c", "qa!")
	cmd.Env = h.env()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("vim: %v\n%s", err, b)
	}
	name, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, strings.TrimSpace(string(name)), "vim/doc/gemkit.txt")
}

// sameFile checks that the help buffer shows the plugin's help file.
func sameFile(t *testing.T, name, want string) {
	t.Helper()
	a, err1 := os.Stat(name)
	b, err2 := os.Stat(want)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Fatalf(":help gemkit opened %q, want the package's doc/gemkit.txt (%v %v)", name, err1, err2)
	}
}
