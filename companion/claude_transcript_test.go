package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gemkit/gemkit/internal/golden"
)

// Claude Code's endpoint is written down as transcripts too, in
// testdata/claude/*.txtar, each on a fresh companion whose workspace holds
// main.go:
//
//	What the case shows, in prose.
//	-- handshake --
//	GET /                                       the path of the WebSocket handshake
//	X-Claude-Code-Ide-Authorization: TOKEN      the headers that matter (Host and
//	                                            Origin may be given; the test adds
//	                                            the upgrade's own, subprotocol mcp)
//	-- response --
//	101 Switching Protocols                     the status, the headers that matter,
//	                                            the body of a refusal
//	-- claude --
//	the messages Claude Code sends, one a line
//	-- companion --
//	the messages the companion sends, one a line, until every request sent
//	so far has its answer (and at least one came)
//	-- editor --
//	what the person does (as in testdata/mcp)
//
// Volatile values are PORT, TOKEN, WORKSPACE and TIMESTAMP, as in
// testdata/mcp. go test -update rewrites the response and companion
// sections.
func TestClaudeTranscripts(t *testing.T) {
	golden.Transcripts(t, filepath.Join("testdata", "claude"), func(t *testing.T, a *golden.Archive) {
		runClaudeTranscript(t, a)
	})
}

// claudeWire is one Claude Code transcript's companion and connection.
type claudeWire struct {
	*wire
	conn    *websocket.Conn
	msgs    chan string
	pending map[string]bool // ids of the requests not yet answered
}

func runClaudeTranscript(t *testing.T, a *golden.Archive) {
	fe := newFakeEditor()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: fe, Version: "1.0.0", Claude: true, ClaudeLockDir: t.TempDir()})
	w := &claudeWire{wire: &wire{t: t, srv: srv, ws: ws, fe: fe}, pending: map[string]bool{}}
	a.Play(t, map[string]golden.Step{
		"handshake": {Do: w.handshake, Shown: "response"},
		"claude":    {Do: func(data string) string { w.send(data); return "" }},
		"companion": {Do: func(string) string { return w.receive() }, Shown: golden.Here},
		"editor":    {Do: func(data string) string { w.act(strings.TrimSpace(data)); return "" }},
	})
}

// real and norm are those of the wire, with Claude Code's port and token.
func (w *claudeWire) real(s string) string {
	return strings.NewReplacer("PORT", strconv.Itoa(w.srv.ClaudePort()), "TOKEN", w.srv.ClaudeToken(), "WORKSPACE", w.ws).Replace(s)
}

func (w *claudeWire) norm(s string) string {
	s = strings.NewReplacer(w.srv.ClaudeToken(), "TOKEN", w.ws, "WORKSPACE", strconv.Itoa(w.srv.ClaudePort()), "PORT").Replace(s)
	return timestampRE.ReplaceAllString(s, `"timestamp":TIMESTAMP`)
}

// claudeHeadersShown are the handshake answer's headers a transcript
// shows.
var claudeHeadersShown = []string{"Connection", "Content-Type", "Sec-Websocket-Protocol", "Upgrade"}

func (w *claudeWire) handshake(text string) string {
	t := w.t
	lines := strings.Split(strings.TrimSpace(w.real(text)), "\n")
	method, path, _ := strings.Cut(lines[0], " ")
	if method != http.MethodGet {
		t.Fatalf("handshake: %q is not a GET", lines[0])
	}
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}, Subprotocols: []string{claudeSubprotocol}}
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ": ")
		if k == "Host" {
			opts.Host = v
			continue
		}
		opts.HTTPHeader.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d%s", w.srv.ClaudePort(), path), opts)
	if resp == nil {
		t.Fatalf("handshake: %v", err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n", resp.Status)
	for _, k := range claudeHeadersShown {
		v := resp.Header.Get(k)
		if k == "Connection" && resp.Close {
			v = "close"
		}
		if v != "" {
			fmt.Fprintf(&out, "%s: %s\n", k, v)
		}
	}
	if err != nil {
		if body, _ := io.ReadAll(resp.Body); len(body) > 0 {
			out.WriteString("\n" + strings.TrimSuffix(string(body), "\n") + "\n")
		}
		return w.norm(out.String())
	}
	c.SetReadLimit(-1)
	w.conn = c
	w.msgs = make(chan string, 100)
	go func() {
		defer close(w.msgs)
		for {
			_, msg, err := c.Read(context.Background())
			if err != nil {
				return
			}
			w.msgs <- string(msg)
		}
	}()
	t.Cleanup(func() { c.Close(websocket.StatusNormalClosure, "") })
	return w.norm(out.String())
}

// send writes each line as one message and notes the requests among them.
func (w *claudeWire) send(text string) {
	t := w.t
	if w.conn == nil {
		t.Fatal("a claude section before a handshake that succeeded")
	}
	for _, l := range strings.Split(strings.TrimSpace(w.real(text)), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method != "" && len(m.ID) > 0 {
			w.pending[string(m.ID)] = true
		}
		if err := w.conn.Write(context.Background(), websocket.MessageText, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
}

// receive reads messages until every request sent has its answer and at
// least one message came; pings are left out.
func (w *claudeWire) receive() string {
	t := w.t
	var out strings.Builder
	got := 0
	timeout := time.After(10 * time.Second)
	for got == 0 || len(w.pending) > 0 {
		select {
		case msg, ok := <-w.msgs:
			if !ok {
				out.WriteString("(the connection closed)\n")
				return w.norm(out.String())
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal([]byte(msg), &m)
			if m.Method == "ping" {
				continue
			}
			if m.Method == "" {
				delete(w.pending, string(m.ID))
			}
			got++
			out.WriteString(msg + "\n")
		case <-timeout:
			t.Fatalf("waiting for the answers to %v; so far:\n%s", w.pending, out.String())
		}
	}
	return w.norm(out.String())
}

// act is the wire's, with Claude Code's volatile values.
func (w *claudeWire) act(line string) {
	w.wire.act(strings.ReplaceAll(line, "WORKSPACE", w.ws))
}
