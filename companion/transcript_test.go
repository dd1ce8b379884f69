package companion

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/golden"
)

// The companion's wire, as a Gemini CLI sees it, is written down as
// transcripts in testdata/mcp/*.txtar, one case a file, each on a fresh
// companion whose workspace holds main.go:
//
//	What the case shows, in prose.
//	-- request --
//	POST /mcp                          the method and path
//	Authorization: Bearer TOKEN        headers (Host is 127.0.0.1:PORT unless given)
//
//	{"jsonrpc":"2.0",...}              the body, if any
//	-- response --
//	200 OK                             the status, the headers that matter, the body
//	-- editor --
//	accept WORKSPACE/main.go text      what the person does: focus PATH LINE CHAR,
//	                                   accept PATH CONTENT, reject PATH (of the
//	                                   diff last shown), mention PATH FROM TO
//	-- notification --
//	the next message on the session's open GET stream (pings left out)
//
// Volatile values are written as PORT, TOKEN, SESSION, WORKSPACE and
// TIMESTAMP, in requests (where the test puts the real ones back) and in
// answers. A request with a Content-Length header and no body sends the
// headers only: the guard answers before reading a body. The test fails
// when an answer differs; go test -update rewrites the response and
// notification sections from what the companion does now.
func TestMCPTranscripts(t *testing.T) {
	golden.Transcripts(t, filepath.Join("testdata", "mcp"), func(t *testing.T, a *golden.Archive) {
		runWireTranscript(t, a)
	})
}

// wire is one transcript's companion and what the test learnt of it.
type wire struct {
	t      *testing.T
	srv    *Server
	ws     string
	fe     *fakeEditor
	sid    string
	stream *bufio.Reader // the open GET stream, once one is
}

// runWireTranscript plays a's requests and editor actions in order,
// replacing each response and notification section with what came.
func runWireTranscript(t *testing.T, a *golden.Archive) {
	fe := newFakeEditor()
	// The editor's diff holds the proposal until the person changes it.
	fe.onOpen = func(path, content string) {
		fe.mu.Lock()
		fe.closeContent[path] = content
		fe.mu.Unlock()
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &wire{t: t, srv: startServer(t, Config{Workspace: []string{ws}, Editor: fe, Version: "1.0.0"}), ws: ws, fe: fe}
	a.Play(t, map[string]golden.Step{
		"request":      {Do: w.do, Shown: "response"},
		"editor":       {Do: w.editor},
		"notification": {Do: func(string) string { return w.next() }, Shown: golden.Here},
	})
}

// editor does what the person does, as an editor section says.
func (w *wire) editor(data string) string {
	w.act(strings.TrimSpace(data))
	return ""
}

// real puts the volatile values into s; norm takes them out again.
func (w *wire) real(s string) string {
	return strings.NewReplacer("PORT", strconv.Itoa(w.srv.Port()), "TOKEN", w.srv.Token(), "SESSION", w.sid, "WORKSPACE", w.ws).Replace(s)
}

var timestampRE = regexp.MustCompile(`"timestamp":\d+`)

func (w *wire) norm(s string) string {
	if w.sid != "" {
		s = strings.ReplaceAll(s, w.sid, "SESSION")
	}
	s = strings.NewReplacer(w.srv.Token(), "TOKEN", w.ws, "WORKSPACE", strconv.Itoa(w.srv.Port()), "PORT").Replace(s)
	return timestampRE.ReplaceAllString(s, `"timestamp":TIMESTAMP`)
}

// headersShown are the response headers a transcript shows.
var headersShown = []string{"Allow", "Connection", "Content-Type", ide.HeaderSessionID, "Www-Authenticate"}

// do sends one request on a connection of its own and renders the answer.
// A GET that opens the event stream keeps its connection, and its answer
// shows the first message on it.
func (w *wire) do(text string) string {
	t := w.t
	head, body, _ := strings.Cut(w.real(text), "\n\n")
	lines := strings.Split(strings.TrimSpace(head), "\n")
	method, path, _ := strings.Cut(lines[0], " ")
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\n", method, path)
	hdr := lines[1:]
	if !slices.ContainsFunc(hdr, func(l string) bool { return strings.HasPrefix(l, "Host:") }) {
		fmt.Fprintf(&req, "Host: 127.0.0.1:%d\r\n", w.srv.Port())
	}
	for _, l := range hdr {
		req.WriteString(l + "\r\n")
	}
	body = strings.TrimSuffix(body, "\n")
	if !slices.ContainsFunc(hdr, func(l string) bool { return strings.HasPrefix(l, "Content-Length:") }) && method != http.MethodGet {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n" + body)

	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", w.srv.Port()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if sid := resp.Header.Get(ide.HeaderSessionID); sid != "" {
		w.sid = sid
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n", resp.Status)
	for _, k := range headersShown {
		v := resp.Header.Get(k)
		if k == "Connection" && resp.Close {
			v = "close" // net/http keeps it in resp.Close only
		}
		if v != "" {
			fmt.Fprintf(&out, "%s: %s\n", k, v)
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.SetReadDeadline(time.Time{})
		t.Cleanup(func() { c.Close() })
		w.stream = bufio.NewReader(resp.Body)
		out.WriteString("\n" + w.next())
		return w.norm(out.String())
	}
	defer c.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	if len(data) > 0 {
		out.WriteString("\n" + strings.TrimSuffix(string(data), "\n") + "\n")
	}
	return w.norm(out.String())
}

// next is the next event on the open stream other than a ping, as its
// lines.
func (w *wire) next() string {
	t := w.t
	if w.stream == nil {
		t.Fatal("a notification section before a GET opened the stream")
	}
	got := make(chan string, 1)
	go func() {
		for {
			var ev strings.Builder
			for {
				l, err := w.stream.ReadString('\n')
				if err != nil {
					got <- "(the stream ended: " + err.Error() + ")\n"
					return
				}
				if l == "\n" {
					break
				}
				ev.WriteString(l)
			}
			if !strings.Contains(ev.String(), `"method":"ping"`) {
				got <- ev.String()
				return
			}
		}
	}()
	select {
	case ev := <-got:
		return w.norm(ev)
	case <-time.After(30 * time.Second):
		t.Fatal("no message on the stream within 30 s")
		return ""
	}
}

// act does what the person does in the editor.
func (w *wire) act(line string) {
	f := strings.SplitN(w.real(line), " ", 3)
	switch {
	case f[0] == "focus" && len(f) == 3:
		var l, c int
		if _, err := fmt.Sscanf(f[2], "%d %d", &l, &c); err != nil {
			w.t.Fatalf("editor: %q: %v", line, err)
		}
		w.srv.Focus(f[1], &ide.Cursor{Line: l, Character: c}, "")
	case f[0] == "accept" && len(f) == 3:
		w.shown(f[1])
		w.srv.DiffAccepted(f[1], f[2])
	case f[0] == "reject" && len(f) == 2:
		w.shown(f[1])
		w.srv.DiffRejected(f[1])
	case f[0] == "mention" && len(f) == 3:
		var from, to int
		if _, err := fmt.Sscanf(f[2], "%d %d", &from, &to); err != nil {
			w.t.Fatalf("editor: %q: %v", line, err)
		}
		w.srv.Mention(f[1], from, to)
	default:
		w.t.Fatalf("editor: unknown action %q", line)
	}
}

// shown waits until the editor has been asked to show the diff of path:
// the person can answer only a diff they see.
func (w *wire) shown(path string) {
	select {
	case req := <-w.fe.openCh:
		if req.FilePath != path {
			w.t.Fatalf("the editor shows a diff of %s, not %s", req.FilePath, path)
		}
	case <-time.After(10 * time.Second):
		w.t.Fatalf("the editor was not asked to show a diff of %s", path)
	}
}

// wireQuoteRE finds the transcripts a doc quotes of the companion's wire
// (mcp: testdata/mcp, in docs/editor-protocol.md) or of Claude Code's
// endpoint (claude: testdata/claude, in docs/claude-code.md): a marker
// naming the file, then a fenced block.
var wireQuoteRE = regexp.MustCompile("(?s)<!-- (mcp|claude) transcript: ([\\w./-]+) -->\n```\n(.*?)```\n")

// TestDocQuotesWireTranscripts: every exchange docs/editor-protocol.md
// and docs/claude-code.md quote under a transcript marker is the tested
// transcript itself: > before what the client sends, < before what the
// companion answers, and the person's actions in the editor in brackets.
// go test -update rewrites the quoted blocks.
func TestDocQuotesWireTranscripts(t *testing.T) {
	for _, doc := range []string{"editor-protocol.md", "claude-code.md"} {
		t.Run(doc, func(t *testing.T) {
			path := filepath.Join("..", "docs", doc)
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			out := wireQuoteRE.ReplaceAllFunc(text, func(m []byte) []byte {
				n++
				sub := wireQuoteRE.FindSubmatch(m)
				folder, name := string(sub[1]), string(sub[2])
				a := golden.ReadArchive(t, filepath.Join("testdata", folder, filepath.FromSlash(name)))
				var b bytes.Buffer
				fmt.Fprintf(&b, "<!-- %s transcript: %s -->\n```\n", folder, name)
				for _, sec := range a.Sections {
					if sec.Name == "editor" {
						fmt.Fprintf(&b, "  [in the editor: %s]\n", strings.TrimSpace(sec.Data))
						continue
					}
					mark := "< "
					if sec.Name == "request" || sec.Name == "handshake" || sec.Name == "claude" {
						mark = "> "
					}
					for _, l := range strings.Split(strings.TrimSuffix(sec.Data, "\n"), "\n") {
						b.WriteString(strings.TrimRight(mark+l, " ") + "\n")
					}
				}
				b.WriteString("```\n")
				return b.Bytes()
			})
			if n == 0 {
				t.Fatalf("%s quotes no transcript of the companion's wire", path)
			}
			golden.Check(t, path, out)
		})
	}
}
