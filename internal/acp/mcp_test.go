package acp_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
)

// startHTTPMCP runs `gemkit mcp --http` (a real Streamable HTTP MCP
// server) in f's home and returns its URL and bearer token.
func startHTTPMCP(t *testing.T, f *fixture) (url, token string) {
	t.Helper()
	token = "test-token-0123456789abcdef"
	cmd := exec.Command(f.bin, "mcp", "--http")
	cmd.Dir, cmd.Env, cmd.Stderr = f.ws, append(f.env(), "GEMKIT_MCP_TOKEN="+token), os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("gemkit mcp --http printed no address: %v", err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "serving Streamable HTTP at ")
	if !ok {
		t.Fatalf("gemkit mcp --http printed %q", line)
	}
	return url, token
}

// TestMCPServers: a stdio and an HTTP MCP server passed in session/new
// are both offered, under names valid for the model that do not collide
// even when the servers' names differ only in characters a function name
// cannot hold, and each call reaches its own server. A server that cannot
// start fails session/new with its name.
func TestMCPServers(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		fakemodel.Call("mcp_my_srv_read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Call("mcp_my_srv_read_doc_2", map[string]any{"extension": "demo", "name": "nope"}),
		fakemodel.Text("Both."),
	)
	url, token := startHTTPMCP(t, f)
	env := f.envMap()
	r := drive(t, plan{
		Command: f.bin, Args: []string{"acp"}, Env: env, Cwd: f.ws,
		MCPServers: []any{
			map[string]any{"name": "my.srv", "command": f.bin, "args": []string{"mcp"}, "env": []any{}},
			map[string]any{"type": "http", "name": "my srv", "url": url, "headers": []any{map[string]any{"name": "Authorization", "value": "Bearer " + token}}},
		},
		Prompts: []planPrompt{textPrompt("Read the guide twice.")},
	})
	if r.SessionError != nil || len(r.Prompts) != 1 || r.Prompts[0].StopReason != "end_turn" {
		t.Fatalf("session/new %+v, prompts %+v", r.SessionError, r.Prompts)
	}
	first, _ := f.model.Turns()[0].Generate()
	names := " " + strings.Join(first.FunctionNames(), " ") + " "
	if !strings.Contains(names, " mcp_my_srv_read_doc ") || !strings.Contains(names, " mcp_my_srv_read_doc_2 ") {
		t.Errorf("offered: %s", names)
	}
	if got := turnText(t, f.model, 1); !strings.Contains(got, "The count tool repeats a word.") {
		t.Errorf("the stdio server's answer: %s", got)
	}
	if got := turnText(t, f.model, 2); !strings.Contains(got, "nope") {
		t.Errorf("the HTTP server's answer: %s", got)
	}

	bad := drive(t, plan{
		Command: f.bin, Args: []string{"acp"}, Env: env, Cwd: f.ws,
		MCPServers: []any{map[string]any{"name": "missing", "command": "/nonexistent/server", "args": []string{}, "env": []any{}}},
	})
	if bad.SessionError == nil || !strings.Contains(string(bad.SessionError.Data), `MCP server \"missing\"`) {
		t.Errorf("session/new with a server that cannot start: %+v", bad.SessionError)
	}
}
