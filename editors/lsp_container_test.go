package editors_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestLSPNeovimGeminiCLIInContainer is TestLSPNeovimGeminiCLI with the
// real Gemini CLI run as in a container (gemkittest.InContainer), where
// it dials host.docker.internal, and nothing set for it: no
// REMOTE_CONTAINERS, no SSH_CONNECTION, no step from the person. It still
// connects ("Connected to Neovim"), through the stdio command the
// discovery file names (`gemkit ide bridge`, a child of the CLI), and its
// write_file lands in the buffer, is edited, saved and written byte for
// byte, its outcome coming back through the bridge.
func TestLSPNeovimGeminiCLIInContainer(t *testing.T) {
	d, screen, target, proposal := startGeminiLSPIn(t, neovims[0], nvimLSPConfig(t), true)
	// The harness's folders are siblings of the workspace.
	if !bridgeRunning(filepath.Dir(filepath.Dir(target))) {
		t.Fatal("no `gemkit ide bridge` runs: the CLI did not connect through the discovery file's stdio command")
	}
	waitScreen(t, screen, "Neovim's prompt about the proposal", func(s string) bool {
		return strings.Contains(s, "is proposed in its buffer") && strings.Contains(s, "3. Edit first")
	})
	d.answerPrompt(t, "3<CR>")
	waitFor(t, "the proposal in b.txt's buffer", func() bool { return d.BufferText(t, target) == proposal })
	d.command(t, "stopinsert")
	d.command(t, "tabprevious")
	d.command(t, "normal! Goadded in nvim")
	d.command(t, "write")
	want := proposal + "added in nvim\n"
	gemkittest.WaitFile(t, target, want)
	d.command(t, "tabnext")
	waitScreen(t, screen, "the model's answer after the write", func(s string) bool { return strings.Contains(s, "Done writing.") })
	if b, _ := os.ReadFile(target); string(b) != want {
		t.Fatalf("b.txt holds %q, want %q", b, want)
	}
}

// bridgeRunning reports whether a `gemkit ide bridge` process runs for a
// discovery file under root.
func bridgeRunning(root string) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, e := range dirs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		if args := strings.Split(string(b), "\x00"); len(args) > 3 && args[1] == "ide" && args[2] == "bridge" && strings.HasPrefix(args[3], root+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// shellJoin quotes argv for a POSIX shell (Neovim's :terminal runs its
// command through 'shell').
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
