package progsearch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestInterpreterNotRegular: a FIFO at a command's path (or a link to
// one), which a tool that may write the workspace can make, is no script
// and does not hold the reader: Interpreter says "" at once.
func TestInterpreterNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "server")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "", link: "", dir: "", script: "node"} {
		done := make(chan string, 1)
		go func() { done <- Interpreter(path) }()
		select {
		case got := <-done:
			if got != want {
				t.Errorf("Interpreter(%s) = %q, want %q", path, got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Interpreter(%s) still blocks after 30 s", path)
		}
	}
}
