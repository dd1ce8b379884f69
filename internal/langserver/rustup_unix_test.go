//go:build unix

package langserver

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRustupWorkspaceFiles: a toolchain file in the workspace, which a
// model may have written, is read through the workspace's root: one that
// links out of it names no toolchain, and a FIFO in its place does not
// hold the lookup.
func TestRustupWorkspaceFiles(t *testing.T) {
	stable := "default_host_triple = \"" + host + "\"\ndefault_toolchain = \"stable-" + host + "\"\n"
	layout := rustupLayout{link: symlink, settings: stable, toolchains: map[string]bool{"stable-" + host: true, "nightly-" + host: false}}

	ws, environ := layout.make(t)
	outside := filepath.Join(t.TempDir(), "toolchain.toml")
	write(t, outside, "[toolchain]\nchannel = \"nightly\"\n", 0o644)
	if err := os.Symlink(outside, filepath.Join(ws, "rust-toolchain.toml")); err != nil {
		t.Fatal(err)
	}
	if err := Check(Builtin(), Look(ws, environ), "", filepath.Join(ws, "src", "main.rs")); err != nil {
		t.Errorf("a rust-toolchain.toml linking out of the workspace chose its toolchain: %v", err)
	}

	ws, environ = layout.make(t)
	if err := syscall.Mkfifo(filepath.Join(ws, "rust-toolchain"), 0o644); err != nil {
		t.Skipf("no FIFO could be made here (%v); CI's machine makes one", err)
	}
	done := make(chan error, 1)
	go func() { done <- Check(Builtin(), Look(ws, environ), "", filepath.Join(ws, "src", "main.rs")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("with a FIFO as rust-toolchain: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a FIFO named rust-toolchain in the workspace held the lookup")
	}
}
