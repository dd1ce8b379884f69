package companion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// postRaw sends body exactly as given, bytes that are not UTF-8 included.
func (c *rawClient) postRaw(body []byte) []byte {
	c.t.Helper()
	resp, err := c.hc.Do(c.request(http.MethodPost, body))
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("POST status %d: %s", resp.StatusCode, data)
	}
	return data
}

// TestOpenDiffRefusesInvalidText: an openDiff whose newContent holds
// bytes that are not UTF-8, or a lone surrogate escape, gets an isError
// result that says why, and the editor never sees the changed text.
func TestOpenDiffRefusesInvalidText(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: ed})
	c := dial(t, srv)
	path := filepath.Join(ws, "a.txt")
	for _, tt := range []struct{ name, content, why string }{
		{"latin-1", "caf\xe9", "not valid UTF-8"},
		{"lone surrogate", `a\udc00b`, "surrogate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"openDiff","arguments":{"filePath":"` + path + `","newContent":"` + tt.content + `"}}}`)
			raw := c.postRaw(body)
			var msg struct {
				ID     int        `json:"id"`
				Result toolResult `json:"result"`
			}
			if err := json.Unmarshal(raw, &msg); err != nil {
				t.Fatalf("answer not JSON: %s", raw)
			}
			if msg.ID != 7 || !msg.Result.IsError || len(msg.Result.Content) != 1 ||
				!strings.Contains(msg.Result.Content[0].Text, tt.why) || !strings.Contains(msg.Result.Content[0].Text, "openDiff") {
				t.Fatalf("answer %s, want an isError result for id 7 saying %q", raw, tt.why)
			}
		})
	}
	ed.mu.Lock()
	shown := len(ed.opened)
	ed.mu.Unlock()
	if shown != 0 {
		t.Fatalf("the editor was asked to show %d diffs", shown)
	}
	// A valid diff still goes through on the same session.
	if res, raw := c.callTool("openDiff", map[string]any{"filePath": path, "newContent": "café"}); res.IsError {
		t.Fatalf("valid openDiff failed: %s", raw)
	}
}

// TestOtherRequestsRefuseInvalidText: a request other than a tool call
// gets JSON-RPC -32602.
func TestOtherRequestsRefuseInvalidText(t *testing.T) {
	srv := startServer(t, Config{})
	c := dial(t, srv)
	raw := c.postRaw([]byte("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}"))
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(raw), &msg); err != nil || msg.Error.Code != -32602 || !strings.Contains(msg.Error.Message, "UTF-8") {
		t.Fatalf("answer %s, want -32602 naming UTF-8", raw)
	}
}

// TestWebSocketRefusesInvalidText: on Claude Code's endpoint and on
// /stream, a tool call whose text is not valid Unicode gets an isError
// result and any other request -32602, as on /mcp; the editor is never
// asked to show the changed text.
func TestWebSocketRefusesInvalidText(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
	path := filepath.Join(srv.workspaceSnapshot()[0], "a.txt")
	streamURL := "ws://127.0.0.1:" + strconv.Itoa(srv.Port()) + StreamPath
	for _, ep := range []struct {
		name string
		dial func() *wsClient
		args string
	}{
		{"claude", func() *wsClient { return dialClaude(t, srv) },
			`"name":"openDiff","arguments":{"old_file_path":"` + path + `","new_file_path":"` + path + `","new_file_contents":"%s","tab_name":"t"}`},
		{"stream", func() *wsClient {
			c := dialWS(t, streamURL, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
			c.initialize()
			return c
		}, `"name":"openDiff","arguments":{"filePath":"` + path + `","newContent":"%s"}`},
	} {
		t.Run(ep.name, func(t *testing.T) {
			c := ep.dial()
			for i, content := range []string{"caf\xe9", `a\udc00b`} {
				id := 100 + i
				raw := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{`+ep.args+`}}`, id, content)
				if err := c.c.Write(context.Background(), websocket.MessageText, []byte(raw)); err != nil {
					t.Fatal(err)
				}
				select {
				case m := <-c.resps:
					var res toolResult
					_ = json.Unmarshal(m["result"], &res)
					if string(m["id"]) != strconv.Itoa(id) || !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "openDiff refused") {
						t.Fatalf("answer %v, want an isError result for id %d", m, id)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("no answer")
				}
			}
			if err := c.c.Write(context.Background(), websocket.MessageText, []byte("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}")); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-c.resps:
				if !strings.Contains(string(m["error"]), "-32602") {
					t.Fatalf("answer %v, want -32602", m)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no answer")
			}
		})
	}
	ed.mu.Lock()
	shown := len(ed.opened)
	ed.mu.Unlock()
	if shown != 0 {
		t.Fatalf("the editor was asked to show %d diffs", shown)
	}
}
