package extmcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// linkExtension links the extension in src into the store of home as
// Gemini CLI and gemkit do (an entry with its install metadata naming
// src), writing src's manifest and a server script first.
func linkExtension(t *testing.T, home, name, src string) {
	t.Helper()
	entry := filepath.Join(home, ".gemini", "extensions", name)
	if err := os.MkdirAll(entry, 0o700); err != nil {
		t.Fatal(err)
	}
	md, _ := json.Marshal(extension.InstallMetadata{Source: src, Type: extension.SourceLink})
	if err := os.WriteFile(filepath.Join(entry, extension.InstallMetadataFile), md, 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"gemini-extension.json": `{"name": "` + name + `", "version": "1.0.0", "mcpServers": {"notes": {"command": "node", "args": ["${extensionPath}/server.mjs"]}}}`,
		"server.mjs":            "// the consented server\n",
		"tools/list.json":       `["lookup"]`,
	}
	for f, text := range files {
		p := filepath.Join(src, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOtherExtensionsReadOnly is the sixth round's first finding: a
// server allowed to write the workspace (gemkit extensions sandbox
// --allow-write workspace) rewrote a second extension the person had
// linked from a folder inside the workspace (its script, its tool list
// and its gemini-extension.json, adding a server), which Gemini CLI then
// started with the person's rights. Every extension's folder is now
// read-only to every server, wherever it lies: the writes are refused
// and reported as another extension's folder, the files unchanged,
// while the rest of the workspace stays writable. Its class: the same
// extension linked through a path with a link in it (the metadata names
// ws/ext-link, a symlink to the folder), and one linked from inside the
// server's own data folder, which the server would write whatever its
// widening: the server is then not started, in words naming both.
func TestOtherExtensionsReadOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	inWS := filepath.Join(s.ws, "tools", "notes-ext")
	linkExtension(t, s.home, "notes", inWS)
	real := filepath.Join(s.ws, "vendor", "linked-ext")
	os.MkdirAll(real, 0o755)
	os.Symlink(real, filepath.Join(s.ws, "ext-link"))
	linkExtension(t, s.home, "linked", filepath.Join(s.ws, "ext-link"))
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fx.Widening = extension.Widening{Write: extension.AccessWorkspace}
	s.m.Sync([]extmcp.Spec{fx})

	if text, isErr, err := call(t, s.m, fx, "write", map[string]any{"path": filepath.Join(s.ws, "made.txt")}); err != nil || isErr {
		t.Fatalf("writing the workspace (allowed): %q %v %v", text, isErr, err)
	}
	for _, p := range []string{
		filepath.Join(inWS, "gemini-extension.json"), filepath.Join(inWS, "server.mjs"), filepath.Join(inWS, "tools", "list.json"),
		filepath.Join(inWS, "added.mjs"), filepath.Join(real, "gemini-extension.json"), filepath.Join(s.ws, "ext-link", "server.mjs"),
	} {
		before, _ := os.ReadFile(p)
		text, isErr, err := call(t, s.m, fx, "write", map[string]any{"path": p})
		if err != nil || !isErr {
			t.Errorf("writing %s: %q %v %v, want a refusal", p, text, isErr, err)
		}
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Errorf("%s changed: %q", p, after)
		}
	}
	if want := "extension realmcp's MCP server fixture was refused a write to " + filepath.Join(inWS, "gemini-extension.json") +
		" (the folder of another extension (" + inWS + "), read-only to every sandboxed process whatever is allowed"; !strings.Contains(s.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}

	// An extension linked from inside the server's own data folder.
	data := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "realmcp")
	linkExtension(t, s.home, "indata", filepath.Join(data, "ext"))
	s.m.Close()
	m := extmcp.NewManager(extmcp.Config{
		Launcher: &sandbox.Launcher{}, Workspace: s.ws, Timeout: 30 * time.Second,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home},
	})
	defer m.Close()
	m.Sync([]extmcp.Spec{fx})
	_, failed := m.Tools(context.Background())
	if len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), "its data folder "+data+" overlaps "+filepath.Join(data, "ext")+", an extension's folder") {
		t.Errorf("a server whose data folder holds a linked extension: %+v", failed)
	}
}

// TestWallsUnprivileged runs the walls' tests as uid 65534.
func TestWallsUnprivileged(t *testing.T) {
	if !testing.Short() && os.Getuid() == 0 {
		extensionDir(t)
	}
	sandboxtest.RerunUnprivileged(t, "^(TestOtherExtensionsReadOnly|TestDataFolderBounded|TestRuntimeFoldersClosed)$")
}

// duBytes is what the files under dir take on disk.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					total += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return total
}

// TestDataFolderBounded is the sixth round's finding of policy: a server
// filled 3 GiB of the person's disk in its data folder. The folder is
// bounded (here 16 MiB; 1 GiB unless raised by name): a server that
// writes past it is stopped and reported in words, with the command that
// raises the bound, long before it has written what it asked (256 MiB),
// and is not started again while the folder holds the bound. Its class:
// one fallocate call that would take 10 GiB at once (refused in the
// sandbox, EOPNOTSUPP, so the disk is only taken as fast as it is
// written), and a shell that writes 1 MiB files in ever new folders (the
// watch follows the folders it makes).
func TestDataFolderBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers of its own: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	const bound = 16 << 20
	dataOf := func(ext string) string {
		return filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", ext)
	}
	spec := func(ext string) extmcp.Spec {
		sp := extmcp.Spec{Extension: ext, Server: "fixture", Dir: s.ext, Command: "node", Args: []string{filepath.Join(s.ext, "fixture.mjs")}}
		sp.Widening.DataBytes = bound
		return sp
	}
	fill, falloc, shell := spec("filler"), spec("falloc"), spec("shell")
	s.m.Sync([]extmcp.Spec{fill, falloc, shell})

	text, isErr, err := call(t, s.m, fill, "fill", map[string]any{"path": filepath.Join(dataOf("filler"), "blob"), "mib": 256})
	if err == nil && !isErr {
		t.Errorf("a server that wrote 256 MiB into its 16 MiB data folder was not stopped: %q", text)
	}
	// The call says gemkit stopped it, and why, not that it exited
	// (tried in the tour: 'exited during the call of run').
	if err == nil || !strings.Contains(err.Error(), "filled its data folder to ") || !strings.Contains(err.Error(), "during the call of fill, so gemkit stopped it") || strings.Contains(err.Error(), "exited during") {
		t.Errorf("the call's error does not say gemkit stopped the server for its data folder: %v", err)
	}
	if used := duBytes(t, dataOf("filler")); used < bound || used > 128<<20 {
		t.Errorf("the data folder holds %d bytes when the server was stopped (bound %d)", used, bound)
	} else {
		t.Logf("stopped with %d MiB in the folder (bound 16 MiB)", used>>20)
	}
	want := "extension filler's MCP server fixture was refused more room in its data folder " + dataOf("filler") + " (its data folder holds "
	waitFor(t, func() bool { return strings.Contains(s.log.String(), want) })
	if !strings.Contains(s.log.String(), "its bound of 16 MiB: gemkit stopped the server before it fills your disk); to allow it: gemkit extensions sandbox filler --data-limit 32MiB") {
		t.Errorf("the log does not say the bound and how to raise it:\n%s", s.log.String())
	}
	if _, _, err := call(t, s.m, fill, "ok", map[string]any{}); err == nil || !strings.Contains(err.Error(), "is not started: its data folder "+dataOf("filler")+" holds") {
		t.Errorf("a server whose folder holds its bound was started again: %v", err)
	}

	// One fallocate that would take 10 GiB: refused, nothing taken.
	text, _, err = call(t, s.m, falloc, "run", map[string]any{"cmd": "fallocate", "args": []string{"-l", "10G", filepath.Join(dataOf("falloc"), "big")}})
	if err != nil || !strings.Contains(text, "Operation not supported") {
		t.Errorf("fallocate in the sandbox: %q %v", text, err)
	}
	if used := duBytes(t, dataOf("falloc")); used > bound {
		t.Errorf("fallocate took %d bytes", used)
	}

	// 1 MiB files in ever new folders.
	script := `i=0; while [ $i -lt 200 ]; do mkdir -p "$HOME/d$i/e" && head -c 1048576 /dev/zero > "$HOME/d$i/e/f" || exit 3; i=$((i+1)); done; echo wrote all`
	text, _, err = call(t, s.m, shell, "run", map[string]any{"cmd": "sh", "args": []string{"-c", script}})
	if err == nil && strings.Contains(text, "wrote all") {
		t.Errorf("a shell that wrote 200 MiB in new folders was not stopped")
	}
	if used := duBytes(t, dataOf("shell")); used > 128<<20 {
		t.Errorf("the data folder holds %d bytes when the server was stopped (bound %d)", used, bound)
	} else {
		t.Logf("the shell stopped with %d MiB in the folder (bound 16 MiB)", used>>20)
	}
}
