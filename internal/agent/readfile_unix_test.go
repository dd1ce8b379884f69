//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileOnlyRegular: read_file answers at once for a FIFO (a tool
// can turn README.md into one, and opening it used to block `gemkit run`
// for good), and still reads a regular file.
func TestReadFileOnlyRegular(t *testing.T) {
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "README.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &Agent{Workspace: ws}
	for _, tc := range []struct{ path, want string }{
		{"README.md", "README.md is not a regular file"},
		{"a.txt", ""},
	} {
		done := make(chan struct{})
		var got string
		var err error
		go func() {
			defer close(done)
			got, err = a.readFile(context.Background(), json.RawMessage(`{"path": "`+tc.path+`"}`))
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("read_file %s blocked", tc.path)
		}
		switch {
		case tc.want == "" && (err != nil || got != "text"):
			t.Errorf("%s: %q %v", tc.path, got, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %q %v, want an error saying %q", tc.path, got, err, tc.want)
		}
	}
}

// TestProposeEditOnlyRegular: propose_edit reads the current content as
// read_file does, so a FIFO a tool made at README.md answers at once with
// an error instead of blocking `gemkit run`, and nothing is written over
// it; a regular file is still edited.
func TestProposeEditOnlyRegular(t *testing.T) {
	ws := t.TempDir()
	fifo := filepath.Join(ws, "README.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &Agent{Workspace: ws, Host: LocalHost{Reviewer: YesReviewer{}}}
	for _, tc := range []struct{ path, want string }{
		{"README.md", "README.md: not a regular file"},
		{"dir", "dir: a folder, not a file"},
		{"a.txt", ""},
	} {
		done := make(chan struct{})
		var err error
		go func() {
			defer close(done)
			_, err = a.proposeEdit(context.Background(), json.RawMessage(`{"path": "`+tc.path+`", "search": "old", "replace": "new"}`))
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("propose_edit %s blocked", tc.path)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.path, err, tc.want)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("README.md is no longer the FIFO: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "new text" {
		t.Errorf("a.txt = %q", b)
	}
}
