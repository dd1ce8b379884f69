package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestStreamWithTypeScriptSDK connects the MCP TypeScript SDK's WebSocket
// client transport to /stream of `gemkit ide serve --editor stdio`: it
// lists the same tools as /mcp, gets the context, and its diff goes
// through diff/open with the outcome coming back on the socket.
func TestStreamWithTypeScriptSDK(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/sdk")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	file := filepath.Join(ws, "s.txt")
	if err := os.WriteFile(file, []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ed, err := scripted.Start(ctx, scripted.Options{Binary: gemkittest.Gemkit(t), Workspace: []string{ws}, TMPDIR: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Stop()
	ed.Focus(file, 1, 1, "")

	cmd := exec.CommandContext(ctx, node, "--experimental-websocket", "--no-warnings", filepath.Join(interop, "stream-client.mjs"),
		strconv.Itoa(ed.Ready.Port), ed.Ready.Env["GEMINI_CLI_IDE_AUTH_TOKEN"], file)
	cmd.Dir = interop
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	next := func() map[string]json.RawMessage {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the SDK client ended early: %v", lines.Err())
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("line %s: %v", lines.Bytes(), err)
		}
		return m
	}
	if got := string(next()["tools"]); got != `["closeDiff","openDiff"]` {
		t.Errorf("tools %s", got)
	}
	if got := string(next()["context"]); !strings.Contains(got, `"workspaceState"`) {
		t.Errorf("context %s", got)
	}
	select {
	case d := <-ed.Opened:
		if d.FilePath != file || d.NewContent != "from the stream client\n" {
			t.Errorf("diff/open %+v", d)
		}
	case <-ctx.Done():
		t.Fatal("no diff/open")
	}
	if got := string(next()["openDiff"]); !strings.Contains(got, `"content":[]`) {
		t.Errorf("openDiff result %s", got)
	}
	ed.Accept(file, "edited\n")
	if got := string(next()["outcome"]); !strings.Contains(got, `"content":"edited\n"`) || !strings.Contains(got, `"filePath":"`+file) {
		t.Errorf("outcome %s", got)
	}
}
