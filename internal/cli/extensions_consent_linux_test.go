package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// openPTY opens a real pseudo-terminal pair, so the consent prompt can be
// tested the way a person meets it: stdin is a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func TestConsentPromptOnTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer    string
		installed bool
	}{{"n\n", false}, {"\n", false}, {"y\n", true}, {"YES\n", true}} {
		e := newEnv(t)
		master, slave := openPTY(t)
		if _, err := master.Write([]byte(tc.answer)); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"extensions", "--home", e.home, "--workspace", e.ws, "install", "testdata/extensions/code-analyzer"},
			Streams{In: slave, Out: &out, Err: &errb})
		if !strings.Contains(errb.String(), "Read its source before you agree.\n\nDo you want to continue? [y/N]") || !strings.Contains(errb.String(), "read files in your workspace") {
			t.Errorf("answer %q: no prompt with the permissions:\n%s", tc.answer, errb.String())
		}
		_, statErr := os.Stat(filepath.Join(e.home, ".gemini", "extensions", "code-analyzer"))
		if got := statErr == nil; got != tc.installed || (code == ExitOK) != tc.installed {
			t.Errorf("answer %q: installed %v, exit %d; want installed %v\n%s", tc.answer, got, code, tc.installed, errb.String())
		}
		if !tc.installed && !strings.Contains(errb.String(), "consent refused") {
			t.Errorf("answer %q: refusal not explained:\n%s", tc.answer, errb.String())
		}
	}
}

// TestGitProgressOnTerminal checks that a person at a terminal sees git's
// own progress while a repository is cloned.
func TestGitProgressOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	master, slave := openPTY(t)
	if _, err := master.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"extensions", "--home", e.home, "--workspace", e.ws, "install", url},
		Streams{In: slave, Out: &out, Err: &errb})
	if code != ExitOK {
		t.Fatalf("install: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "Receiving objects") {
		t.Errorf("no git progress on stderr:\n%s", errb.String())
	}
}

// TestConsentFromAgentShell: run where an agent's shell runs its model's
// commands (GEMINI_CLI=1, CLAUDECODE=1), `gemkit extensions consent EXT
// --grant` records nothing until the person types the extension's name
// on the terminal; with no terminal (Claude Code's Bash tool has none) it
// is refused with words sending the person to a terminal of their own.
// The same holds for `extensions run --consent`.
func TestConsentFromAgentShell(t *testing.T) {
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	bin := gemkittest.Gemkit(t)
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "my-ext")
	e.mustRun("new", src)
	if out, errOut, code := e.run("link", src); code == ExitOK {
		t.Fatalf("link without consent and without a terminal: exit 0\n%s%s", out, errOut)
	}
	if out, errOut, code := e.run("link", src, "--consent"); code != ExitOK {
		t.Fatalf("link: exit %d\n%s%s", code, out, errOut)
	}
	e.mustRun("consent", "my-ext", "--revoke")
	granted := func() bool {
		_, _, code := e.run("consent", "my-ext")
		return code == ExitOK
	}
	gk := func(extra ...string) []string {
		return append([]string{bin, "extensions", "--home", e.home, "--workspace", e.ws}, extra...)
	}

	// No terminal: refused, whichever agent.
	for _, marker := range []string{"GEMINI_CLI=1", "CLAUDECODE=1"} {
		for _, args := range [][]string{{"consent", "my-ext", "--grant"}, {"run", "--consent", "my-ext", "slugify", "--text", "A b"}} {
			cmd := exec.Command(bin, gk(args...)[1:]...)
			cmd.Env = append(os.Environ(), marker)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "there is no terminal to ask you on. Only you can agree: run `gemkit extensions consent my-ext --grant` in a terminal of your own") ||
				!strings.Contains(string(out), "a command that grants consent is consenting") {
				t.Errorf("%s %v: %v\n%s", marker, args, err, out)
			}
			if granted() {
				t.Fatalf("%s %v recorded consent", marker, args)
			}
		}
	}

	// A terminal: the person types the name; anything else refuses.
	s := &tmuxSession{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	var cmdline strings.Builder
	for _, a := range gk("consent", "my-ext", "--grant") {
		cmdline.WriteString(fmt.Sprintf("%q ", a))
	}
	script := "for i in 1 2; do env GEMINI_CLI=1 " + cmdline.String() + "; echo \"EXIT $?\"; done; sleep 600"
	s.tmux("new-session", "-d", "-s", "gk", "-x", "200", "-y", "40", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(tmux, "-S", s.sock, "kill-server").Run() })
	question := "This command runs in Gemini CLI's shell, where its model may be the one running it. Only you can agree: type my-ext and Enter"
	s.waitPane("the question", func(p string) bool {
		return strings.Contains(p, question) && strings.Contains(p, "may:") && strings.Contains(strings.Join(strings.Fields(p), " "), "Approving, in Gemini CLI, a command that grants consent is consenting")
	})
	if granted() {
		t.Fatal("consent recorded before the person answered")
	}
	s.keys("-l", "y")
	s.keys("Enter")
	s.waitPane("the refusal", func(p string) bool {
		return strings.Contains(p, "its name was not typed") && strings.Contains(p, "EXIT 1")
	})
	if granted() {
		t.Fatal("y recorded consent")
	}
	s.waitPane("the second question", func(p string) bool { return strings.Count(p, question) == 2 })
	s.keys("-l", "my-ext")
	s.keys("Enter")
	s.waitPane("the grant", func(p string) bool {
		return strings.Contains(p, "Consent given to my-ext") && strings.Contains(p, "EXIT 0")
	})
	if !granted() {
		t.Fatal("the typed name did not record consent")
	}
}

// TestUpdateFromAgentShell: `gemkit extensions update` of an extension
// whose code changed, run by an agent's shell with no terminal (as a
// model would run it, with nobody there), installs nothing, with or
// without --consent, and sends the person to a terminal of their own.
// With a terminal, a y does not agree; the person typing the name does.
func TestUpdateFromAgentShell(t *testing.T) {
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	bin := gemkittest.Gemkit(t)
	e := newEnv(t)
	repo, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	e.mustRun("install", url, "--consent")
	lint := filepath.Join(repo, "tools", "lint.py")
	code, err := os.ReadFile(lint)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lint, append(code, "\nprint('new code')\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	gemkittest.Git(t, repo, "commit", "--quiet", "-am", "new code")
	installed := filepath.Join(e.home, ".gemini", "extensions", "code-analyzer", "tools", "lint.py")
	for _, marker := range []string{"GEMINI_CLI=1", "CLAUDECODE=1"} {
		for _, extra := range [][]string{nil, {"--consent"}} {
			cmd := exec.Command(bin, append([]string{"extensions", "--home", e.home, "--workspace", e.ws, "update", "code-analyzer"}, extra...)...)
			cmd.Env = append(os.Environ(), marker)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "Only you can agree: run `gemkit extensions update code-analyzer` in a terminal of your own") ||
				!strings.Contains(string(out), "tools/lint.py (changed)") {
				t.Errorf("%s update %v: %v\n%s", marker, extra, err, out)
			}
			if data, _ := os.ReadFile(installed); strings.Contains(string(data), "new code") {
				t.Fatalf("%s update %v installed the new code", marker, extra)
			}
		}
	}

	// A terminal: the question asks for the name; y refuses, the name
	// agrees.
	sess := &tmuxSession{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	var cmdline strings.Builder
	for _, a := range []string{bin, "extensions", "--home", e.home, "--workspace", e.ws, "update", "code-analyzer"} {
		cmdline.WriteString(fmt.Sprintf("%q ", a))
	}
	script := "for i in 1 2; do env GEMINI_CLI=1 " + cmdline.String() + "; echo \"EXIT $?\"; done; sleep 600"
	sess.tmux("new-session", "-d", "-s", "gk", "-x", "200", "-y", "50", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(tmux, "-S", sess.sock, "kill-server").Run() })
	question := "Only you can agree: type code-analyzer and Enter"
	sess.waitPane("the question", func(p string) bool { return strings.Contains(p, question) })
	sess.keys("-l", "y")
	sess.keys("Enter")
	sess.waitPane("the refusal", func(p string) bool { return strings.Contains(p, "EXIT 1") || strings.Contains(p, "EXIT 2") })
	if data, _ := os.ReadFile(installed); strings.Contains(string(data), "new code") {
		t.Fatal("y installed the new code")
	}
	sess.waitPane("the second question", func(p string) bool { return strings.Count(p, question) == 2 })
	sess.keys("-l", "code-analyzer")
	sess.keys("Enter")
	sess.waitPane("the update", func(p string) bool {
		return strings.Contains(p, "Updated code-analyzer") && strings.Contains(p, "EXIT 0")
	})
	if data, _ := os.ReadFile(installed); !strings.Contains(string(data), "new code") {
		t.Fatal("the typed name did not install the new code")
	}
}
