package companion

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestClients: each kind of client is listed, by the name it gave at
// initialize, from when it connects to when it goes, and every change is
// announced.
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
