package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestLanguageServerClient: one Conn as the client of a language server,
// over Content-Length framing, both directions at once. The server end
// sends what gopls v0.23.0 sends a client around its start and a
// cancelled request: on initialized, workspace/configuration
// (internal/server/general.go, fetchFolderOptions) and
// client/registerCapability (general.go, initialized); for work in
// progress, window/workDoneProgress/create with a string token, then
// $/progress (internal/progress/progress.go, Start);
// textDocument/publishDiagnostics; and, to a request the client cancels
// with $/cancelRequest, the error -32800 "JSON RPC cancelled"
// (internal/protocol/protocol.go, CancelHandler).
func TestLanguageServerClient(t *testing.T) {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	t.Cleanup(func() { cw.Close(); sw.Close() })
	clientLog := &gemkittest.Output{}

	// The server end, as gopls answers.
	server := NewConn(sr, sw, Options{Framer: HeaderFramer(), Peer: "language client", Logger: slog.New(slog.DiscardHandler)})
	g := &fakeGopls{conn: server, referencesID: make(chan json.RawMessage, 1)}
	g.sawConfig.Add(1)
	g.sawRegister.Add(1)
	g.sawCancel.Add(1)
	go server.Run(context.Background(), HandlerFunc(g.handle))

	// The client: what gemkit starting a language server does.
	client := NewConn(cr, cw, Options{
		Framer:       HeaderFramer(),
		Peer:         "language server",
		CancelMethod: "$/cancelRequest",
		Logger:       slog.New(slog.NewTextHandler(clientLog, nil)),
	})
	notes := make(chan string, 10)
	clientDone := make(chan error, 1)
	go func() {
		clientDone <- client.Run(context.Background(), languageClient(notes))
	}()

	ctx := context.Background()
	var init struct {
		ServerInfo struct{ Name string }
	}
	if err := client.Call(ctx, waitTimeout, "initialize", map[string]any{"processId": 1, "rootUri": "file:///w", "capabilities": map[string]any{}}, &init); err != nil || init.ServerInfo.Name != "gopls" {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	if err := client.Notify("initialized", struct{}{}); err != nil {
		t.Fatal(err)
	}
	g.sawConfig.Wait()
	g.sawRegister.Wait()
	var got []string
	for len(got) < 3 {
		select {
		case n := <-notes:
			got = append(got, n)
		case <-time.After(waitTimeout):
			t.Fatalf("notifications so far: %q", got)
		}
	}
	if !strings.Contains(got[0], `"kind":"begin"`) || !strings.HasPrefix(got[2], "textDocument/publishDiagnostics") {
		t.Fatalf("notifications %q", got)
	}

	// A request given up: cancelled at the server, whose answer is then
	// dropped quietly.
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- client.Call(rctx, 0, "textDocument/references", map[string]any{}, nil) }()
	cancel() // before or after the request is written: it is written, then cancelled
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	g.sawCancel.Wait()

	if err := client.Call(ctx, waitTimeout, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	client.Notify("exit", nil)
	sw.Close() // the server process ends
	if err := <-clientDone; err != io.EOF {
		t.Fatalf("client Run: %v", err)
	}
	if log := clientLog.String(); strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") {
		t.Fatalf("client log: %s", log)
	}
}

// fakeGopls is the server end of TestLanguageServerClient, answering as
// gopls does; the wait groups are done as the client answers its calls
// and cancels a request.
type fakeGopls struct {
	conn                              *Conn
	sawConfig, sawRegister, sawCancel sync.WaitGroup
	referencesID                      chan json.RawMessage
}

// handle answers one request or notification of the client.
func (g *fakeGopls) handle(ctx context.Context, r Request) (any, error) {
	switch r.Method {
	case "initialize":
		return map[string]any{"capabilities": map[string]any{"referencesProvider": true}, "serverInfo": map[string]string{"name": "gopls"}}, nil
	case "initialized":
		go g.initialized(ctx)
	case "textDocument/references":
		g.referencesID <- r.ID
		return nil, ErrNoReply // works until cancelled
	case "$/cancelRequest":
		g.conn.Reply(<-g.referencesID, nil, &Error{Code: CodeRequestCancelled, Message: "JSON RPC cancelled"})
		g.sawCancel.Done()
	case "shutdown":
		return nil, nil
	case "exit":
		g.conn.Stop(nil)
	}
	return nil, nil
}

// initialized calls the client and notifies it as gopls does once the
// client is initialized.
func (g *fakeGopls) initialized(ctx context.Context) {
	server := g.conn
	var cfg []map[string]any
	if err := server.Call(ctx, 0, "workspace/configuration", map[string]any{"items": []map[string]string{{"scopeUri": "file:///w", "section": "gopls"}}}, &cfg); err == nil && len(cfg) == 1 {
		g.sawConfig.Done()
	}
	if err := server.Call(ctx, 0, "client/registerCapability", map[string]any{"registrations": []map[string]string{{"id": "workspace/didChangeConfiguration", "method": "workspace/didChangeConfiguration"}}}, nil); err == nil {
		g.sawRegister.Done()
	}
	if err := server.Call(ctx, 0, "window/workDoneProgress/create", map[string]string{"token": "5577006791947779410"}, nil); err != nil {
		return
	}
	server.Notify("$/progress", map[string]any{"token": "5577006791947779410", "value": map[string]string{"kind": "begin", "title": "Setting up workspace"}})
	server.Notify("$/progress", map[string]any{"token": "5577006791947779410", "value": map[string]string{"kind": "end"}})
	server.Notify("textDocument/publishDiagnostics", map[string]any{"uri": "file:///w/a.go", "diagnostics": []map[string]any{{"message": "undefined: x", "severity": 1}}})
}

// languageClient answers a language server's requests as gemkit does,
// and sends the notifications it gets to notes.
func languageClient(notes chan<- string) Handler {
	return HandlerFunc(func(_ context.Context, r Request) (any, error) {
		switch r.Method {
		case "workspace/configuration":
			var p struct{ Items []json.RawMessage }
			if err := json.Unmarshal(r.Params, &p); err != nil {
				return nil, InvalidParams(r.Method, err.Error())
			}
			out := make([]map[string]any, len(p.Items))
			for i := range out {
				out[i] = map[string]any{}
			}
			return out, nil
		case "client/registerCapability", "window/workDoneProgress/create":
			return nil, nil
		case "$/progress", "textDocument/publishDiagnostics":
			notes <- r.Method + " " + string(r.Params)
			return nil, nil
		}
		return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + r.Method}
	})
}
