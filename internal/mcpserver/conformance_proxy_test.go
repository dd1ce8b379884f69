package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenProxy listens on a loopback port and forwards every request to
// the server at target (http://127.0.0.1:PORT/mcp) with the bearer token,
// and with the server's own Host in place of the proxy's. Any other Host,
// such as the suite's DNS-rebinding probe, and every Origin go through as
// sent. It returns the URL to give the suite and the record of what went
// through it.
func tokenProxy(t *testing.T, target, token string) (string, *proxyRecord) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = u.Scheme, u.Host
			r.Out.Host = u.Host
			if r.In.Host != self {
				r.Out.Host = r.In.Host
			}
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE events as they come
		// The suite drops streams it has read enough of; the proxy's
		// complaints about that are noise.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	rec := &proxyRecord{start: time.Now()}
	srv := &http.Server{Handler: rec.wrap(p), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + self + u.Path, rec
}

// proxyRecord is what went through a tokenProxy: each request's JSON-RPC
// method and id, and whether the server answered it. When the suite's
// client says a request timed out, it tells whether the server left a
// request unanswered (gemkit's fault) or answered every one it was sent.
type proxyRecord struct {
	start time.Time
	mu    sync.Mutex
	calls []*proxiedCall
}

// proxiedCall is one request through the proxy.
type proxiedCall struct {
	at, took      time.Duration
	httpMethod    string
	session       string
	method        string // the JSON-RPC method, "" for a GET or a batch
	id            string // the JSON-RPC id, "" for a notification
	status, bytes int
	answered      bool // the body carried the request's id
	done          bool
}

func (c *proxiedCall) String() string {
	state := fmt.Sprintf("%d, %d bytes, in %s", c.status, c.bytes, c.took.Round(time.Millisecond))
	if !c.done {
		state = "no answer yet"
	}
	return fmt.Sprintf("+%s %s %s id=%s session=%s: %s", c.at.Round(time.Millisecond), c.httpMethod, c.method, c.id, c.session, state)
}

func (r *proxyRecord) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c := &proxiedCall{at: time.Since(r.start), httpMethod: req.Method, session: req.Header.Get("Mcp-Session-Id")}
		if req.Body != nil {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &msg) == nil {
				c.method, c.id = msg.Method, string(msg.ID)
			}
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		if c.id != "" {
			cw.want = []byte(`"id":` + c.id)
		}
		next.ServeHTTP(cw, req)
		r.mu.Lock()
		c.done, c.status, c.bytes, c.took = true, cw.status, cw.bytes, time.Since(r.start)-c.at
		c.answered = cw.found
		r.mu.Unlock()
	})
}

// unanswered are the JSON-RPC requests the server was sent and did not
// answer: still open, or ended without an answer under the request's id
// (a JSON-RPC error is an answer, as is a refusal with a body, such as
// the DNS-rebinding probe's 403; the proxy's own 502, when the server
// could not be reached, and a 202 are not).
func (r *proxyRecord) unanswered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		if c.httpMethod != http.MethodPost || c.id == "" || c.id == "null" {
			continue
		}
		if !c.done || (!c.answered && c.status < 400) || c.bytes == 0 {
			out = append(out, c.String())
		}
	}
	return out
}

func (r *proxyRecord) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, c := range r.calls {
		b.WriteString(c.String() + "\n")
	}
	return b.String()
}

// countingWriter counts a response's status and bytes and looks for want
// in its body (the answer's id, which the SDK writes compact, as
// `"id":1`). It flushes as the proxy asks, for the event streams.
type countingWriter struct {
	http.ResponseWriter
	status, bytes int
	want          []byte
	found         bool
	tail          []byte // the last bytes written, for a want split across writes
}

func (w *countingWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.bytes += n
	if len(w.want) > 0 && !w.found {
		w.tail = append(w.tail, p[:n]...)
		w.found = bytes.Contains(w.tail, w.want)
		if keep := len(w.want) - 1; len(w.tail) > keep {
			w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
		}
	}
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// clientTimedOut says whether every failed check failed on the suite's
// client's own timeout (the TypeScript SDK's -32001 "Request timed out").
func (cs conformanceChecks) clientTimedOut() bool {
	failed := false
	for _, c := range cs {
		if c.Status != "FAILURE" {
			continue
		}
		if !strings.Contains(c.ErrorMessage, "MCP error -32001: Request timed out") {
			return false
		}
		failed = true
	}
	return failed
}

// rerunLost runs the scenario name once more, alone, when its first run
// failed on the client's timeout while the server had answered every
// request the proxy passed it: the request the client waited for never
// reached the proxy, or its answer was delivered in full. Seen twice,
// against `gemkit mcp --http`, on tools-list, on a loaded 2-core
// machine: once in CI's command here, once after about eight minutes of
// this test's race binary run 200 times, 8 at a time, beside two
// CPU-bound loops (git show f68add0:bench/README.md, issue 47's lost tools/list); not in
// the 593 runs of this version of it that followed, nor in 300 before
// it. With the server's goroutines dumped 20 s into the wait,
// no request of its was open, and stopping the server then did not end
// the client's wait, as it would have a request the proxy had sent on.
// A request the server left unanswered fails the test at once. It
// returns why the scenario fails, "" when the second run passes.
func rerunLost(t *testing.T, f *fixture, node, suite, url string, seen *proxyRecord, name string, refused map[string]string, first conformanceChecks) string {
	t.Helper()
	if open := seen.unanswered(); len(open) > 0 {
		return first.fails(refused) + "\nthe server did not answer:\n" + strings.Join(open, "\n")
	}
	t.Logf("%s: the suite's client timed out (%s) while the server had answered every request it was sent; running the scenario once more. The proxy saw:\n%s", name, first, seen)
	again := runConformance(t, f, node, suite, url, "--scenario", name)[name]
	if again == nil {
		return "the second run wrote no result for it"
	}
	return again.fails(refused)
}

// TestProxyRecord checks what rerunLost decides on: a request the server
// answered, a notification, one answered under another id and one it
// never answered, as the proxy records them; and which failures are the
// client's timeout.
func TestProxyRecord(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	rec := &proxyRecord{start: time.Now()}
	// The shapes a Streamable HTTP server answers in: 202 Accepted with no
	// body for a notification (MCP 2025-11-25, transports §2.1.4), and an
	// event stream whose "message" event carries the answer (go-sdk
	// v1.8.0's mcp/streamable.go, servePOST and writeEvent).
	h := rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"hang"`)):
			close(arrived)
			<-release
		case bytes.Contains(body, []byte(`"notifications/`)):
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		}
	}))
	srv := httptest.NewServer(h) // on loopback
	t.Cleanup(srv.Close)
	// The answered ones end before their client reads the end of the
	// answer, and so before the hanging one is sent.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, // answered under another id
	} {
		resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	go http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"a","method":"hang"}`))
	<-arrived
	open := rec.unanswered()
	if len(open) != 2 || !strings.Contains(open[0], "tools/list id=7") || !strings.Contains(open[1], `hang id="a"`) || !strings.Contains(open[1], "no answer yet") {
		t.Fatalf("unanswered = %q, want the one answered under another id and the one hanging\nrecord:\n%s", open, rec)
	}
	for _, tc := range []struct {
		checks conformanceChecks
		want   bool
	}{
		{conformanceChecks{{ID: "tools-list", Status: "FAILURE", ErrorMessage: "Failed: MCP error -32001: Request timed out"}}, true},
		{conformanceChecks{{ID: "tools-list", Status: "FAILURE", ErrorMessage: "Failed: MCP error -32601: Method not found"}}, false},
		{conformanceChecks{{ID: "a", Status: "SUCCESS"}, {ID: "b", Status: "FAILURE", ErrorMessage: "MCP error -32001: Request timed out"}, {ID: "c", Status: "FAILURE", ErrorMessage: "bad result"}}, false},
		{conformanceChecks{{ID: "a", Status: "SUCCESS"}}, false},
	} {
		if got := tc.checks.clientTimedOut(); got != tc.want {
			t.Errorf("clientTimedOut(%s) = %v, want %v", tc.checks, got, tc.want)
		}
	}
}
