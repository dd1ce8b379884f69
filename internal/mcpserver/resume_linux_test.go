package mcpserver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// gateManifest's tool waits for a line on the workspace's gate.fifo: the
// test learns that the tool runs when its open of the FIFO's other end
// returns, and ends it by writing.
const gateManifest = `{"name": "gate", "version": "1.0.0", "description": "A tool the test ends.",
 "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [{"name": "wait", "description": "Waits for the gate.", "executable": "tools/wait.sh", "runtime": "shell"}]}`

// TestHTTPResultAcrossReconnect: a client on revision 2025-11-25 (the
// official Go SDK's, as Claude Code 2.1.330 negotiates with gemkit mcp)
// has the connection of its tools/call cut while the tool runs. The
// result, written when the tool ends, reaches it on the stream it opens
// again with Last-Event-ID: gemkit mcp --http keeps each event and sends
// the priming event that makes a call's stream resumable. Without the
// store the result went to no stream, and the call waited until the
// client gave up. (Revision 2025-06-18, Gemini CLI 0.61's, has no priming
// event: its clients resume only the GET stream; 2026-07-28 has no
// resumption.)
func TestHTTPResultAcrossReconnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.link(t, "gate", gateManifest, map[string]string{"tools/wait.sh": `read line < "$PWD/gate.fifo"; echo "released: $line"` + "\n"})
	fifo := filepath.Join(f.ws, "gate.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	addr, token := startHTTP(t, f)
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	proxy := gemkittest.NewCutProxy(t, port)
	u.Host = "127.0.0.1:" + strconv.Itoa(proxy.Port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := mcpclient.HTTP(ctx, u.String(), nil, http.Header{"Authorization": {"Bearer " + token}},
		mcpclient.Options{Name: "resume-test", Version: "1", ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	type answer struct {
		res *mcpclient.Result
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := c.CallTool(ctx, "gate_wait", map[string]any{})
		answers <- answer{res, err}
	}()
	gate, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the tool has opened it
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	if n := proxy.Cut(func(req []byte) bool { return bytes.Contains(req, []byte(`"tools/call"`)) }); n != 1 {
		t.Fatalf("cut %d connections carrying the tools/call, want 1", n)
	}
	if _, err := gate.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	gate.Close()
	a := <-answers
	if a.err != nil || a.res.IsError || strings.TrimSpace(a.res.Text("")) != "released: go" {
		t.Fatalf("the call whose connection was cut: %+v, %v", a.res, a.err)
	}
}
