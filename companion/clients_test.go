package companion

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// TestClients: each kind of client is listed, by the name it gave at
// initialize, from when it connects to when it goes, and every change is
// announced; ClientCount counts the same clients.
func TestClients(t *testing.T) {
	changes := make(chan struct{}, 100)
	srv := startServer(t, Config{
		Claude:          true,
		ClaudeLockDir:   filepath.Join(t.TempDir(), "claude", "ide"),
		OnClientsChange: func() { changes <- struct{}{} },
	})
	names := func() []string {
		var out []string
		for _, c := range srv.Clients() {
			out = append(out, c.Name+" "+c.Version+" "+c.Transport)
		}
		return out
	}
	waitClients := func(want ...string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			if got := names(); slices.Equal(got, want) {
				if n := srv.ClientCount(); n != len(want) {
					t.Fatalf("ClientCount() = %d with clients %q", n, want)
				}
				return
			}
			select {
			case <-changes:
			case <-deadline:
				t.Fatalf("clients %q, want %q", names(), want)
			}
		}
	}
	waitClients()

	h := dial(t, srv) // initialize, then the event stream
	waitClients("test 0 http")

	streamURL := "ws://127.0.0.1:" + strconv.Itoa(srv.Port()) + StreamPath
	ws := dialWS(t, streamURL, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
	ws.initialize()
	waitClients("test 0 http", "test 1 websocket")

	cc := dialClaude(t, srv)
	waitClients("test 0 http", "test 1 websocket", "test 1 claude")

	// A session whose event stream closed is not listed; it is again once
	// its client reopens the stream.
	h.closeGET()
	waitClients("test 1 websocket", "test 1 claude")
	h.openGET()
	waitClients("test 0 http", "test 1 websocket", "test 1 claude")

	ws.c.CloseNow()
	cc.c.CloseNow()
	waitClients("test 0 http")
	h.close()
	waitClients()
}

// TestClientAgent names each agent as a person knows it, from what it
// sent at initialize and, where known, its process: Gemini CLI 0.61.0 and
// Qwen Code 0.24.4 send the same clientInfo name (IdeClient in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts, and in
// @qwen-code/qwen-code 0.24.4, which sends version 1.0.0 and protocol
// 2025-11-25 whatever its own version).
func TestClientAgent(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		init                   initInfo
		peer                   peerProcess
		transport              string
		wantAgent, wantVersion string
	}{
		{"gemini over http", initInfo{"streamable-http-client", "0.61.0", "2025-06-18"}, peerProcess{}, TransportHTTP, AgentGemini, "0.61.0"},
		{"gemini over stdio", initInfo{"stdio-client", "0.61.0", "2025-06-18"}, peerProcess{}, TransportHTTP, AgentGemini, "0.61.0"},
		{"qwen by its protocol", initInfo{"streamable-http-client", "1.0.0", "2025-11-25"}, peerProcess{}, TransportHTTP, AgentQwen, ""},
		{"qwen by its process", initInfo{"streamable-http-client", "1.0.0", "2025-11-25"}, peerProcess{pid: 7, agent: AgentQwen, version: "0.24.4"}, TransportHTTP, AgentQwen, "0.24.4"},
		{"gemini by its process", initInfo{"streamable-http-client", "0.61.0", "2025-06-18"}, peerProcess{pid: 7, agent: AgentGemini}, TransportHTTP, AgentGemini, "0.61.0"},
		{"llxprt by its process", initInfo{"streamable-http-client", "1.0.0", "2025-11-25"}, peerProcess{pid: 7, agent: AgentLLxprt}, TransportHTTP, AgentLLxprt, ""},
		{"claude", initInfo{"claude-code", "2.1.330", "2025-06-18"}, peerProcess{}, TransportClaude, AgentClaude, "2.1.330"},
		{"another client", initInfo{"gemkit", "1.2.3", "2025-06-18"}, peerProcess{pid: 7, agent: AgentGemini}, TransportHTTP, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ci clientInfo
			ci.set(tc.init)
			ci.setPeer(tc.peer)
			c := ci.client(tc.transport)
			if c.Agent != tc.wantAgent || c.AgentVersion != tc.wantVersion {
				t.Errorf("agent %q %q, want %q %q", c.Agent, c.AgentVersion, tc.wantAgent, tc.wantVersion)
			}
			if c.Name != tc.init.name || c.Version != tc.init.version || c.Protocol != tc.init.protocol {
				t.Errorf("clientInfo %q %q %q, want it as sent: %+v", c.Name, c.Version, c.Protocol, tc.init)
			}
		})
	}
}

// TestProcessAgent names the program of a command line, as the two CLIs
// run from their npm packages (the commands qwen and gemini start a Node
// child on the package's script, which is the process that connects).
func TestProcessAgent(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "node_modules", "@qwen-code", "qwen-code")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@qwen-code/qwen-code","version":"0.24.4"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args                   []string
		wantAgent, wantVersion string
	}{
		{[]string{"/usr/bin/node", "--expose-gc", filepath.Join(pkg, "cli.js")}, AgentQwen, "0.24.4"},
		{[]string{"node", "/usr/local/bin/qwen"}, AgentQwen, ""},
		{[]string{"/usr/bin/node", "--max-old-space-size=8192", "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js"}, AgentGemini, ""},
		{[]string{"node", "/home/u/.npm-global/bin/gemini"}, AgentGemini, ""},
		{[]string{"node", "/usr/lib/node_modules/@vybestack/llxprt-code/dist/index.js"}, AgentLLxprt, ""},
		{[]string{"/usr/bin/python3", "client.py"}, "", ""},
		{nil, "", ""},
	} {
		if a, v := processAgent(tc.args); a != tc.wantAgent || v != tc.wantVersion {
			t.Errorf("processAgent(%q) = %q %q, want %q %q", tc.args, a, v, tc.wantAgent, tc.wantVersion)
		}
	}
}

// TestOpenDiffNamesTheAgent: the editor is told which agent proposed each
// diff (ProposedBy of OpenDiff's context), from the session or
// connection that asked: Gemini CLI and Qwen Code over /mcp (told apart
// by what they send at initialize, as TestClientAgent), a Gemini CLI over
// /stream, Claude Code on its own endpoint, and nobody for a client that
// is none of them.
func TestOpenDiffNamesTheAgent(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
	ws := srv.workspaceSnapshot()[0]
	path := writeFile(t, ws, "a.txt", "a\n")
	last := func() string {
		t.Helper()
		select {
		case <-ed.openCh:
		case <-time.After(30 * time.Second):
			t.Fatal("the editor was not asked to open the diff")
		}
		ed.mu.Lock()
		defer ed.mu.Unlock()
		return ed.proposers[len(ed.proposers)-1]
	}
	for _, tc := range []struct {
		name, version, protocol, want string
	}{
		{ide.ClientNameHTTP, "0.61.0", "2025-06-18", AgentGemini},
		{ide.ClientNameHTTP, ide.QwenClientVersion, ide.QwenProtocolVersion, AgentQwen},
		{"some-client", "1.0", ide.ProtocolVersion, ""},
	} {
		c := dialAs(t, srv, tc.name, tc.version, tc.protocol)
		if r, _ := c.callTool(ide.ToolOpenDiff, map[string]any{"filePath": path, "newContent": "b\n"}); r.IsError {
			t.Fatalf("openDiff as %s %s failed", tc.name, tc.version)
		}
		if got := last(); got != tc.want {
			t.Errorf("openDiff of %s %s (protocol %s) proposed by %q, want %q", tc.name, tc.version, tc.protocol, got, tc.want)
		}
		srv.DiffRejected(path)
		c.close()
	}

	st := dialWS(t, "ws://127.0.0.1:"+strconv.Itoa(srv.Port())+StreamPath, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
	st.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": ide.ClientNameHTTP, "version": "0.61.0"},
	}, 10*time.Second)
	st.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if r := st.tool(ide.ToolOpenDiff, map[string]any{"filePath": path, "newContent": "c\n"}, 10*time.Second); r.IsError {
		t.Fatalf("openDiff over /stream: %v", r.texts())
	}
	if got := last(); got != AgentGemini {
		t.Errorf("openDiff over /stream proposed by %q, want %q", got, AgentGemini)
	}
	srv.DiffRejected(path)

	cc := dialClaude(t, srv)
	// Claude Code's openDiff answers only once the diff is settled: it is
	// asked from a goroutine, which the test waits for before it ends
	// (its connection closes with the test).
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		cc.tool("openDiff", map[string]any{"old_file_path": path, "new_file_path": path, "new_file_contents": "d\n", "tab_name": "t"}, 20*time.Second)
	}()
	if got := last(); got != AgentClaude {
		t.Errorf("Claude Code's openDiff proposed by %q, want %q", got, AgentClaude)
	}
	srv.DiffRejected(path)
	<-answered
}
