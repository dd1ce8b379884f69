package editorproto

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
)

// TestDiffOpenNamesTheAgent: diff/open carries the agent that proposed
// the change (docs/editor-protocol.md, diff/open), and no agent field when
// the companion does not know it, as before.
func TestDiffOpenNamesTheAgent(t *testing.T) {
	p := newPair(t, Options{})
	errc := make(chan error, 1)
	for i, tc := range []struct{ agent, want string }{
		{companion.AgentClaude, `{"jsonrpc":"2.0","id":1,"method":"diff/open","params":{"filePath":"/w/a.go","newContent":"new\n","agent":"Claude Code"}}`},
		{companion.AgentQwen, `{"jsonrpc":"2.0","id":2,"method":"diff/open","params":{"filePath":"/w/a.go","newContent":"new\n","agent":"Qwen Code"}}`},
		{"", `{"jsonrpc":"2.0","id":3,"method":"diff/open","params":{"filePath":"/w/a.go","newContent":"new\n"}}`},
	} {
		ctx := context.Background()
		if tc.agent != "" {
			ctx = companion.WithProposer(ctx, tc.agent)
		}
		go func() { errc <- p.conn.OpenDiff(ctx, "/w/a.go", "new\n") }()
		if got := p.read(t); got != tc.want {
			t.Errorf("diff/open of %q:\n got %s\nwant %s", tc.agent, got, tc.want)
		}
		p.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"result":{}}`)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadyListsEndpoints: server/ready lists every endpoint the companion
// serves (Gemini CLI's discovery file and port, Claude Code's lock file
// and port, Qwen Code's lock file), which the plugins' status commands
// show.
func TestReadyListsEndpoints(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := New(inR, outW, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- c.Serve(ctx, companion.Config{
			Workspace:    []string{ws},
			DiscoveryDir: filepath.Join(root, "gemini", "ide"),
			PID:          os.Getpid(),
			Claude:       true, ClaudeLockDir: filepath.Join(root, "claude", "ide"),
			Qwen: true, QwenLockDir: filepath.Join(root, "qwen", "ide"),
		})
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	})
	sc := bufio.NewScanner(outR)
	if !sc.Scan() {
		t.Fatal("no server/ready")
	}
	var msg struct {
		Method string `json:"method"`
		Params Ready  `json:"params"`
	}
	if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.Method != MethodServerReady {
		t.Fatalf("first line %s (%v)", sc.Bytes(), err)
	}
	r := msg.Params
	if len(r.Endpoints) != 3 {
		t.Fatalf("endpoints %+v, want Gemini CLI's, Claude Code's and Qwen Code's", r.Endpoints)
	}
	claudePort, _ := strconv.Atoi(r.Env["CLAUDE_CODE_SSE_PORT"])
	want := []Endpoint{
		{companion.AgentGemini, r.Port, r.DiscoveryFile},
		{companion.AgentClaude, claudePort, filepath.Join(root, "claude", "ide", strconv.Itoa(claudePort)+".lock")},
		{companion.AgentQwen, r.Port, filepath.Join(root, "qwen", "ide", strconv.Itoa(r.Port)+".lock")},
	}
	for i, e := range r.Endpoints {
		if e != want[i] {
			t.Errorf("endpoint %d = %+v, want %+v", i, e, want[i])
		}
		if _, err := os.Stat(e.File); err != nil {
			t.Errorf("endpoint %s: %v", e.Agent, err)
		}
	}
}
