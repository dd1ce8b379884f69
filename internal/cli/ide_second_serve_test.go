package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestSecondServeInOneFolder: a second companion for a folder that one
// already serves is warned about when it starts, and `ide doctor` lists
// both, since a new CLI connects to one of them by its own order.
func TestSecondServeInOneFolder(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)

	// At start: what a second `gemkit ide serve` says, with the first one
	// serving.
	var errb bytes.Buffer
	a := e.client.app(Streams{Out: &errb, Err: &errb})
	warnOtherCompanions(a, []string{e.ws}, "")
	if got := errb.String(); !strings.Contains(got, "already serves "+e.ws) || !strings.Contains(got, "gemkit ide doctor") {
		t.Errorf("no warning about the companion already serving the folder:\n%s", got)
	}

	// A second companion of another editor process for the same folder.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second, err := scripted.Start(ctx, scripted.Options{Binary: gemkittest.Gemkit(t), Workspace: []string{e.ws}, TMPDIR: e.tmp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Stop)
	code, out, errOut := e.client.run(context.Background(), "", "ide", "doctor")
	if !strings.Contains(out, "2 companions serve "+e.ws) || !strings.Contains(out, "stop the companions you do not use") {
		t.Errorf("doctor (exit %d) does not list the two companions:\n%s%s", code, out, errOut)
	}
}

// TestSecondServeIgnoresClosedPort: a companion killed under its running
// editor (the terminal front-end's shell) leaves a file whose pid runs
// and whose port is closed. It serves nothing, so a new `gemkit ide
// serve` in that folder must not warn that it "already serves" it.
func TestSecondServeIgnoresClosedPort(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	dir := filepath.Join(tmp, filepath.FromSlash(ide.DiscoveryDirName))
	for _, d := range []string{ws, dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	port := gemkittest.ClosedPort(t)
	b, _ := json.Marshal(map[string]any{"port": port, "workspacePath": ws, "authToken": "x",
		"ideInfo": map[string]string{"name": "gemkit", "displayName": "gemkit"}})
	if err := os.WriteFile(filepath.Join(dir, discovery.FileName(os.Getpid(), port)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	warnOtherCompanions(newIDEClientEnv(tmp, ws).app(Streams{Out: &errb, Err: &errb}), []string{ws}, "")
	if got := errb.String(); strings.Contains(got, "already serves") {
		t.Errorf("warns of a companion whose port is closed:\n%s", got)
	}
}
