//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// contextEvent is an ide/contextUpdate as the client received it.
type contextEvent struct {
	at  time.Time
	ctx ide.Context
}

// diffEvent is an ide/diffAccepted or ide/diffRejected as received.
type diffEvent struct {
	at       time.Time
	method   string
	filePath string
}

// mcpClient is the harness's MCP client: the least a Streamable HTTP client
// does to talk to a companion the way the real Gemini CLI does (IdeClient in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts: protocol 2025-06-18,
// initialize, the GET event stream, tools/call), and nothing more. It is
// written for measurement: a notification is stamped as soon as its event has
// been read off the socket, before it is decoded, so that the client's own
// work counts against neither server.
type mcpClient struct {
	url   string
	token string
	sid   string
	// calls carries the POSTs; the GET stream has a transport of its own,
	// so that neither ever waits for a connection the other holds.
	calls  *http.Client
	stream *http.Client
	nextID atomic.Int64

	stop     context.CancelFunc
	done     chan struct{} // closed when the stream reader has returned
	contexts chan contextEvent
	diffs    chan diffEvent
	// contextsIn counts every ide/contextUpdate read off the stream, those
	// dropped from a full contexts channel included.
	contextsIn atomic.Int64
}

func connect(ctx context.Context, f ide.DiscoveryFile) (*mcpClient, error) {
	c := &mcpClient{
		url:      fmt.Sprintf("http://127.0.0.1:%d%s", f.Port, ide.MCPPath),
		token:    f.AuthToken,
		calls:    &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}},
		stream:   &http.Client{Transport: &http.Transport{DisableCompression: true}},
		done:     make(chan struct{}),
		contexts: make(chan contextEvent, 4096),
		diffs:    make(chan diffEvent, 4096),
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	hdr, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": ide.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "gemkit-bench", "version": "1"},
	}, &init)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if init.ProtocolVersion != ide.ProtocolVersion {
		return nil, fmt.Errorf("negotiated protocol %q, want %q", init.ProtocolVersion, ide.ProtocolVersion)
	}
	if c.sid = hdr.Get(ide.HeaderSessionID); c.sid == "" {
		return nil, errors.New("initialize: no session id")
	}
	if err := c.notifyInitialized(ctx); err != nil {
		return nil, err
	}
	if err := c.openStream(); err != nil {
		return nil, err
	}
	// The first GET stream brings the current context: once it is here,
	// notifications flow.
	select {
	case <-c.contexts:
	case <-time.After(10 * time.Second):
		c.close()
		return nil, errors.New("no context on the first GET stream within 10s")
	}
	return c, nil
}

func (c *mcpClient) close() {
	if c.stop != nil {
		c.stop()
		<-c.done
	}
	c.calls.CloseIdleConnections()
	c.stream.CloseIdleConnections()
}

func (c *mcpClient) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.sid != "" {
		req.Header.Set(ide.HeaderSessionID, c.sid)
		req.Header.Set(ide.HeaderProtocolVersion, ide.ProtocolVersion)
	}
	return req, nil
}

// call sends one JSON-RPC request and decodes its result into result. The
// response may be plain JSON or an SSE stream carrying it.
func (c *mcpClient) call(ctx context.Context, method string, params, result any) (http.Header, error) {
	id := c.nextID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := c.request(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.calls.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	var msg []byte
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		want := strconv.FormatInt(id, 10)
		err = readEvents(resp.Body, func(data []byte) bool {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(data, &m) == nil && string(m.ID) == want {
				msg = data
				return false
			}
			return true
		})
		if msg == nil {
			return nil, fmt.Errorf("%s: the response stream ended without the response: %v", method, err)
		}
	} else if msg, err = io.ReadAll(resp.Body); err != nil {
		return nil, err
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("%s: %w: %.200s", method, err, msg)
	}
	if m.Error != nil {
		return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			return nil, fmt.Errorf("%s: result: %w", method, err)
		}
	}
	return resp.Header, nil
}

func (c *mcpClient) notifyInitialized(ctx context.Context) error {
	req, err := c.request(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return err
	}
	resp, err := c.calls.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return nil
}

// openStream opens the GET event stream and reads it until close.
func (c *mcpClient) openStream() error {
	ctx, stop := context.WithCancel(context.Background())
	req, err := c.request(ctx, http.MethodGet, nil)
	if err != nil {
		stop()
		return err
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		stop()
		return fmt.Errorf("GET stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		stop()
		return fmt.Errorf("GET stream: HTTP %d: %s", resp.StatusCode, b)
	}
	c.stop = stop
	go func() {
		defer close(c.done)
		defer resp.Body.Close()
		readEvents(resp.Body, func(data []byte) bool {
			c.dispatch(time.Now(), data)
			return true
		})
	}()
	return nil
}

// dispatch sorts one notification received at at.
func (c *mcpClient) dispatch(at time.Time, data []byte) {
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil {
		return
	}
	switch m.Method {
	case ide.MethodContextUpdate:
		c.contextsIn.Add(1)
		var ctx ide.Context
		if json.Unmarshal(m.Params, &ctx) != nil {
			return
		}
		select {
		case c.contexts <- contextEvent{at, ctx}:
		default:
		}
	case ide.MethodDiffAccepted, ide.MethodDiffRejected:
		var d ide.DiffRejected
		if json.Unmarshal(m.Params, &d) != nil {
			return
		}
		select {
		case c.diffs <- diffEvent{at, m.Method, d.FilePath}:
		default:
		}
	}
}

// readEvents reads server-sent events from r and passes the data of each
// to event (the moment its last line is read) until event returns false
// or r ends.
func readEvents(r io.Reader, event func(data []byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data, long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...) // a line longer than the buffer
			continue
		}
		if err != nil {
			return err
		}
		if len(long) > 0 {
			line = append(long, line...)
			long = long[:0]
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if !event(data) {
					return nil
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
	}
}

// openDiff calls the openDiff tool and returns how long the ack took.
func (c *mcpClient) openDiff(ctx context.Context, path, content string) (time.Duration, error) {
	var res struct {
		Content []json.RawMessage `json:"content"`
		IsError bool              `json:"isError"`
	}
	start := time.Now()
	_, err := c.call(ctx, "tools/call", map[string]any{
		"name":      ide.ToolOpenDiff,
		"arguments": map[string]any{"filePath": path, "newContent": content},
	}, &res)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if res.IsError {
		return 0, fmt.Errorf("openDiff returned an error: %s", res.Content)
	}
	return d, nil
}

// waitDiff waits for the outcome of the diff of path.
func (c *mcpClient) waitDiff(path string, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case d := <-c.diffs:
			if d.filePath == path {
				if d.method != ide.MethodDiffAccepted {
					return fmt.Errorf("diff of %s: got %s", path, d.method)
				}
				return nil
			}
		case <-t.C:
			return fmt.Errorf("no outcome for the diff of %s within %s", path, timeout)
		}
	}
}

// waitContext waits for a context whose active file is path at line.
func (c *mcpClient) waitContext(path string, line int, timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case e := <-c.contexts:
			ws := e.ctx.WorkspaceState
			if ws == nil || len(ws.OpenFiles) == 0 {
				continue
			}
			f := ws.OpenFiles[0]
			if f.Path == path && f.IsActive && f.Cursor != nil && f.Cursor.Line == line {
				return e.at, nil
			}
		case <-t.C:
			return time.Time{}, fmt.Errorf("no context with %s:%d active within %s", path, line, timeout)
		}
	}
}

// drain drops notifications left over from an earlier phase.
func (c *mcpClient) drain() {
	for {
		select {
		case <-c.contexts:
		case <-c.diffs:
		default:
			return
		}
	}
}
