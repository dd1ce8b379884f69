package cli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestServeOutputReaderGone: `gemkit ide serve | tee log`, stopped with
// Ctrl-C, loses tee to the same SIGINT; the terminal front-end's next
// write (a status line as a connected CLI goes) then met SIGPIPE, which
// killed gemkit before it removed its discovery file, and the file of a
// companion that serves nothing was left for every CLI to rank. With
// the reader of its output gone, gemkit must still stop cleanly.
func TestServeOutputReaderGone(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	cmd := exec.Command(bin, "ide", "serve", "--workspace", ws, "--claude=false", "--qwen=false", "--watch=false")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	// Read up to the line that names the discovery file: the file exists.
	file := ""
	sc := bufio.NewScanner(outR)
	for file == "" && sc.Scan() {
		if _, f, ok := strings.Cut(sc.Text(), "discovery file:"); ok {
			file = strings.TrimSpace(f)
		}
	}
	if file == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no discovery file named: %v", sc.Err())
	}
	outR.Close() // the reader goes, as tee does on Ctrl-C
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if _, serr := os.Stat(file); serr == nil {
		t.Errorf("discovery file %s left behind (gemkit: %v)", file, err)
	}
}
