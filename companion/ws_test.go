package companion

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsClient is a minimal MCP client over WebSocket for tests: requests
// wait for their answer; notifications queue on notes.
type wsClient struct {
	t      testing.TB
	c      *websocket.Conn
	nextID atomic.Int64
	resps  chan map[string]json.RawMessage
	notes  chan map[string]json.RawMessage
}

func dialWS(t testing.TB, url string, hdr http.Header, subprotocol string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{HTTPHeader: hdr}
	if subprotocol != "" {
		opts.Subprotocols = []string{subprotocol}
	}
	c, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", url, err, status)
	}
	c.SetReadLimit(-1)
	w := &wsClient{t: t, c: c, resps: make(chan map[string]json.RawMessage, 100), notes: make(chan map[string]json.RawMessage, 1000)}
	go func() {
		for {
			_, msg, err := c.Read(context.Background())
			if err != nil {
				close(w.notes)
				return
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(msg, &m) != nil {
				continue
			}
			if _, ok := m["method"]; ok {
				w.notes <- m
			} else {
				w.resps <- m
			}
		}
	}()
	t.Cleanup(func() { c.Close(websocket.StatusNormalClosure, "") })
	return w
}

// dialStatus tries a WebSocket handshake and returns the HTTP status.
func dialStatus(t testing.TB, url string, hdr http.Header) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr, Host: hdr.Get("Host")})
	if err == nil {
		c.Close(websocket.StatusNormalClosure, "")
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return resp.StatusCode
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	if err := w.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		w.t.Fatal(err)
	}
}

// call sends a request and returns its result (failing on an error).
func (w *wsClient) call(method string, params any, within time.Duration) json.RawMessage {
	w.t.Helper()
	id := w.nextID.Add(1)
	w.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case m := <-w.resps:
		if string(m["id"]) != strconv.FormatInt(id, 10) {
			w.t.Fatalf("answer to %s has id %s, want %d", method, m["id"], id)
		}
		if e, ok := m["error"]; ok {
			w.t.Fatalf("%s: error %s", method, e)
		}
		return m["result"]
	case <-time.After(within):
		w.t.Fatalf("no answer to %s within %v", method, within)
		return nil
	}
}

func (w *wsClient) initialize() {
	w.t.Helper()
	w.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"},
	}, 10*time.Second)
	w.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// next returns the params of the next notification of method.
func (w *wsClient) next(method string, within time.Duration) json.RawMessage {
	w.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-w.notes:
			if !ok {
				w.t.Fatalf("connection closed while waiting for %s", method)
			}
			if string(m["method"]) == strconv.Quote(method) {
				return m["params"]
			}
		case <-timer.C:
			w.t.Fatalf("no %s within %v", method, within)
			return nil
		}
	}
}

type wsToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (w *wsClient) tool(name string, args map[string]any, within time.Duration) wsToolResult {
	w.t.Helper()
	raw := w.call("tools/call", map[string]any{"name": name, "arguments": args}, within)
	var r wsToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		w.t.Fatalf("%s result %s: %v", name, raw, err)
	}
	return r
}

func (r wsToolResult) texts() []string {
	out := make([]string, len(r.Content))
	for i, c := range r.Content {
		out[i] = c.Text
	}
	return out
}

func websocketDial(url string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr, Subprotocols: []string{"mcp"}})
}
