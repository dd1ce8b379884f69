package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// orderServer is a Server as gemkit mcp builds one (with the extensions'
// servers managed, which adds prompts, subscriptions, logging and
// completion), of an extension with a doc, a skill, a tool and a stdio
// server of its own. Nothing it serves starts a process: the Manager
// has no Launcher (so the server fails to start, with words) and the
// Runner no consent and nobody to ask (so the tool is refused).
func orderServer(t testing.TB) *Server {
	t.Helper()
	dir, ws, home := t.TempDir(), t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{
		"gemini-extension.json": `{"name": "e", "version": "1.0.0", "description": "For the order tests.",
		 "tools": [{"name": "t", "description": "A tool.", "executable": "t.sh", "runtime": "shell"}],
		 "docs": [{"name": "guide", "description": "The guide.", "file": "guide.md"}],
		 "mcpServers": {"srv": {"command": "node", "args": ["server.js"]}}}`,
		"t.sh":                   "echo hi\n",
		"guide.md":               "# Guide\n",
		"skills/triage/SKILL.md": "---\nname: triage\ndescription: Sorts reports.\n---\n# Triage\n",
	})
	m := extmcp.NewManager(extmcp.Config{Workspace: ws, Environ: []string{"HOME=" + home},
		DataRoot: filepath.Join(home, "data"), Refusals: filepath.Join(home, "refusals.json"), Capabilities: filepath.Join(home, "caps.json")})
	t.Cleanup(m.Close)
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Servers: m, Version: "test",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stdioRun is one session of ServeStdio over pipes, as a client's.
type stdioRun struct {
	t     testing.TB
	in    *io.PipeWriter
	lines chan string   // what the server wrote, a line at a time; closed at its end
	ended chan struct{} // closed when ServeStdio returned
	err   error         // what it returned
}

// serveStdio starts a session of s; it ends with the test, or before
// with close.
func serveStdio(t testing.TB, s *Server) *stdioRun {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	r := &stdioRun{t: t, in: inW, lines: make(chan string, 256), ended: make(chan struct{})}
	go func() {
		r.err = s.ServeStdio(ctx, inR, outW)
		outW.Close()
		close(r.ended)
	}()
	go func() {
		defer close(r.lines)
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				r.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go func() {
			for range r.lines {
			}
		}()
		<-r.ended
	})
	return r
}

// send writes one line to the server.
func (r *stdioRun) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("writing %s: %v", line, err)
	}
}

// close ends the client's input and returns what the server wrote after
// and ServeStdio's error, once it returned.
func (r *stdioRun) close() ([]string, error) {
	r.in.Close()
	var rest []string
	for l := range r.lines {
		rest = append(rest, l)
	}
	<-r.ended
	return rest, r.err
}

// next is the next line the server writes that is no notification of
// its own, within a minute.
func (r *stdioRun) next() string {
	r.t.Helper()
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				r.t.Fatal("the session ended")
			}
			if m := readAnswer(l); m.Method != "" {
				continue
			}
			return l
		case <-time.After(time.Minute):
			r.t.Fatal("no answer within a minute")
		}
	}
}

// wireAnswer is what a test reads of a line the server writes.
type wireAnswer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func readAnswer(line string) wireAnswer {
	var a wireAnswer
	json.Unmarshal([]byte(line), &a)
	return a
}

const (
	initLine        = `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	modernMeta      = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
)

// initWith is the initialize request of revision 2025-06-18 under id.
func initWith(id string) string { return strings.Replace(initLine, "%s", id, 1) }

// TestServeStdioOutOfOrder: a message that comes out of a session's
// order is answered with an error when it is a request (ignored when it
// is a notification, as MCP asks), and the session goes on: the ping
// after each case is answered. A second initialize crashed gemkit mcp
// (its answer is a typed nil result beside the SDK's error, which the
// instructions middleware wrote to); a tools/list before initialize was
// answered from the cache (fastList), and a logging/setLevel or a
// resources/subscribe before it reached the extensions' servers (the
// SDK lets those three through before initialize).
func TestServeStdioOutOfOrder(t *testing.T) {
	t.Parallel()
	s := orderServer(t)
	listedOnce(t, s)
	for _, tc := range outOfOrderCases() {
		t.Run(tc.name, func(t *testing.T) { playSteps(t, s, tc.steps) })
	}
}

// listedOnce runs a first session that lists the tools, as a client's
// does, so that the stdio fast path could answer the next ones
// (fastList).
func listedOnce(t *testing.T, s *Server) {
	first := serveStdio(t, s)
	first.send(initWith("1"))
	first.next()
	first.send(initializedLine)
	first.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	first.next()
	if first.close(); !s.serversListed() || s.toolsList.Load() == nil {
		t.Fatal("the tools were listed, and the fast path has no list")
	}
}

// stdioStep is a line sent and what it wants: "" no answer, "result", or
// "error" with words the message holds after a colon.
type stdioStep struct{ send, want string }

// stdioCase is a session of its own, named.
type stdioCase struct {
	name  string
	steps []stdioStep
}

// outOfOrderCases are sessions whose lines come out of the order a
// client keeps, or are not for the server at all.
func outOfOrderCases() []stdioCase {
	return []stdioCase{
		{"a second initialize", []stdioStep{
			{initWith("1"), "result"}, {initializedLine, ""},
			{initWith("2"), `error:duplicate "initialize"`},
			{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "result"},
		}},
		{"a second initialize before initialized", []stdioStep{
			{initWith("1"), "result"}, {initWith("2"), `error:duplicate "initialize"`},
		}},
		{"tools/list before initialize", []stdioStep{
			{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "error:invalid during session initialization"},
			{initWith("2"), "result"}, {initializedLine, ""},
			{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "result"},
		}},
		{"requests the SDK lets through before initialize", []stdioStep{
			{`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`, "error:invalid during session initialization"},
			{`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"gemkit-doc://e/guide"}}`, "error:invalid during session initialization"},
			{`{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"gemkit-doc://e/guide"}}`, "error:invalid during session initialization"},
			{initWith("4"), "result"},
			{`{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug"}}`, "result"},
		}},
		{"initialized before initialize, then calls", []stdioStep{
			{initializedLine, ""},
			{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_doc","arguments":{"extension":"e","name":"guide"}}}`, "error:invalid during session initialization"},
			{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "error:invalid during session initialization"},
			{initWith("3"), "result"}, {initializedLine, ""},
			{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_doc","arguments":{"extension":"e","name":"guide"}}}`, "result"},
		}},
		{"initialized twice", []stdioStep{
			{initWith("1"), "result"}, {initializedLine, ""}, {initializedLine, ""},
			{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "result"},
		}},
		{"initialized with an id", []stdioStep{
			{initWith("1"), "result"},
			{`{"jsonrpc":"2.0","id":2,"method":"notifications/initialized"}`, "error:unexpected id"},
		}},
		{"initialize with bad params, then a good one", []stdioStep{
			{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`, "error:params"},
			{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":null}`, "error:params"},
			{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":[1]}`, "error:cannot unmarshal"},
			{initWith("4"), "result"},
		}},
		{"server/discover after initialize", []stdioStep{
			{initWith("1"), "result"}, {initializedLine, ""},
			{`{"jsonrpc":"2.0","id":2,"method":"server/discover"}`, "error:server/discover"},
			{`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + modernMeta + `}}`, "error:began with initialize"},
			{`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, "result"},
		}},
		{"server/discover after an initialize of a later revision", []stdioStep{
			{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "result"},
			{`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + modernMeta + `}}`, "error:began with initialize"},
		}},
		{"initialize after server/discover", []stdioStep{
			{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`, "result"},
			{initWith("2"), `error:duplicate "initialize"`},
			{`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + modernMeta + `}}`, "result"},
		}},
		{"answers to requests never sent, cancels of unknown ids", []stdioStep{
			{`{"jsonrpc":"2.0","id":99,"result":{}}`, ""},
			{`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}}`, ""},
			{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}`, ""},
			{initWith("1"), "result"},
			{`{"jsonrpc":"2.0","id":98,"result":{}}`, ""},
			{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`, ""},
			{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, ""},
			{`{"jsonrpc":"2.0","method":"notifications/cancelled"}`, ""},
			{`{"jsonrpc":"2.0","method":"notifications/nosuch"}`, ""},
		}},
	}
}

// playSteps sends steps in a session of their own and checks each
// answer; the session then goes on, answering a ping and nothing else.
func playSteps(t *testing.T, s *Server, steps []stdioStep) {
	r := serveStdio(t, s)
	for _, st := range steps {
		r.send(st.send)
		if st.want == "" {
			continue
		}
		a := readAnswer(r.next())
		id := string(a.ID)
		if want := sendID(st.send); id != want {
			t.Fatalf("%s: answered under id %s, want %s", st.send, id, want)
		}
		kind, words, _ := strings.Cut(st.want, ":")
		switch {
		case kind == "result" && (a.Error != nil || a.Result == nil):
			t.Errorf("%s: answered %+v, want a result", st.send, a.Error)
		case kind == "error" && (a.Error == nil || !strings.Contains(a.Error.Message, words)):
			t.Errorf("%s: answered %s %+v, want an error saying %q", st.send, a.Result, a.Error, words)
		}
	}
	// The session goes on: a ping is answered, and nothing
	// came before its answer (a notification answered).
	r.send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if a := readAnswer(r.next()); string(a.ID) != `"last"` || a.Error != nil {
		t.Errorf("the ping after it was answered %s %+v (id %s)", a.Result, a.Error, a.ID)
	}
	rest, err := r.close()
	for _, l := range rest {
		if readAnswer(l).Method == "" {
			t.Errorf("an answer after the last: %s", l)
		}
	}
	if err != nil {
		t.Errorf("the session ended with %v", err)
	}
}

// sendID is the id of a request line as JSON.
func sendID(line string) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal([]byte(line), &m)
	return string(m.ID)
}

// TestCompleteWithoutRef: a completion/complete whose params name no ref
// is refused with words, not a crash, when it reaches the handler (the
// SDK refuses it before, unless MCPGODEBUG's
// disablecompleteparamsvalidation turns its check off).
func TestCompleteWithoutRef(t *testing.T) {
	s := orderServer(t)
	res, err := s.complete(context.Background(), &mcp.CompleteRequest{Params: &mcp.CompleteParams{Argument: mcp.CompleteParamsArgument{Name: "a"}}})
	if err == nil || !strings.Contains(err.Error(), "ref/prompt or ref/resource") {
		t.Errorf("answered %+v, %v", res, err)
	}
}

// TestServeStdioPipelined: a client that writes its lines without waiting
// for answers gets them judged in the order it wrote them: the requests
// the SDK lets through before initialize, written before it, are refused
// though the initialize right after them is answered before their
// handlers run (the SDK runs a request's handler beside the next
// messages), and those written after it are served. Before, the
// refusal read the state the later initialize made, and some were
// served.
func TestServeStdioPipelined(t *testing.T) {
	t.Parallel()
	s := orderServer(t)
	before := []string{
		`{"jsonrpc":"2.0","id":"early","method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":"early","method":"resources/subscribe","params":{"uri":"gemkit-doc://e/guide"}}`,
		`{"jsonrpc":"2.0","id":"early","method":"resources/unsubscribe","params":{"uri":"gemkit-doc://e/guide"}}`,
	}
	// The handlers race: each order is tried many times.
	for i := range 300 {
		r := serveStdio(t, s)
		lines := []string{before[i%len(before)], initWith(`"init"`), strings.Replace(before[(i+1)%len(before)], "early", "late", 1)}
		if _, err := io.WriteString(r.in, strings.Join(lines, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
		got := map[string]wireAnswer{}
		for len(got) < len(lines) {
			a := readAnswer(r.next())
			got[string(a.ID)] = a
		}
		for id, a := range got {
			if early := id == `"early"`; early != (a.Error != nil) {
				t.Fatalf("%s: %s answered %s %+v", strings.Join(lines, " "), id, a.Result, a.Error)
			}
		}
		r.close()
	}
}
