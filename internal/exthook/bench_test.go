package exthook

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox"
)

// BenchmarkRun is a shell hook run in the sandbox (Hook.Run, in the
// process: what `gemkit extensions hook` adds to its own start and the
// consent check) beside the same hook run bare (bash -c), in one run;
// bench/hooks times the whole of both as Gemini CLI starts them.
func BenchmarkRun(b *testing.B) {
	h, _ := hookEnv(b, "cat >/dev/null; echo ok\n")
	l := &sandbox.Launcher{}
	b.Run("sandboxed", func(b *testing.B) {
		for b.Loop() {
			if _, err := h.Run(context.Background(), l, strings.NewReader("{}"), io.Discard, io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("bash", "-c", "cat >/dev/null; echo ok")
			cmd.Stdin = strings.NewReader("{}")
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
