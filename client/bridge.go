package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// The stdio bridge lets a CLI that cannot reach a companion's port reach
// it through a process of its own: Gemini CLI and Qwen Code start the
// command a discovery file names in its stdio field when the port fails
// (IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts, and in @qwen-code/qwen-code
// 0.24.4), and speak MCP on its stdin and stdout. Inside a container
// Gemini CLI dials host.docker.internal, which is not where a companion
// in the same container listens; the bridge, a child of the CLI, dials
// 127.0.0.1. It relays each message as it is, so the companion sees the
// CLI's own initialize (its name, version and protocol), and carries the
// companion's notifications from the session's event stream back.
//
// The token never appears on a command line: the bridge reads it from
// the file whose path it is given, with the real client's checks (a
// regular file of this user). It dials 127.0.0.1 only.

// BridgeOptions configure Bridge.
type BridgeOptions struct {
	// File is the discovery file (or Qwen Code lock file) whose port and
	// token lead to the companion.
	File string
	// In and Out are the CLI's end: newline-delimited JSON-RPC messages
	// (MCP's stdio transport).
	In  io.Reader
	Out io.Writer
	// Logger receives debug messages; nil discards them. The CLI shows
	// its child's standard error in its own terminal, so the bridge says
	// nothing there: failures reach the CLI as JSON-RPC errors.
	Logger *slog.Logger
}

// maxBridgeMessage bounds the memory one message may take either way. A
// proposal larger than the companion takes (ide.MaxRequestBody) is
// refused by the companion, with its words, to the CLI; only a message
// past this bound is dropped unanswered.
const maxBridgeMessage = 256 << 20

// ErrCompanionGone is returned by Bridge when the companion stops
// answering: its port is closed or it no longer knows the session.
var ErrCompanionGone = errors.New("the companion has gone")

// Bridge relays MCP between o.In and o.Out and the companion o.File names,
// until o.In ends (nil), ctx ends, or the companion goes
// (ErrCompanionGone). A request the companion cannot take is answered on
// o.Out with a JSON-RPC error that says why, never dropped.
func Bridge(ctx context.Context, o BridgeOptions) error {
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b := &bridge{log: o.Logger, out: &lineWriter{w: o.Out}, cancel: cancel}
	cfg, err := discovery.ReadOwn(o.File)
	switch {
	case err != nil:
		b.failure = fmt.Errorf("gemkit ide bridge: %w", err)
	case cfg.Port < 1 || cfg.Port > 65535:
		b.failure = fmt.Errorf("gemkit ide bridge: %s names no port between 1 and 65535", o.File)
	default:
		b.url = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)) + ide.MCPPath
		if cfg.AuthToken != nil {
			b.token = *cfg.AuthToken
		}
	}
	b.http = &http.Client{Transport: &http.Transport{
		Proxy:               nil, // the companion is on loopback, never behind a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 8,
	}}

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(o.In, 64<<10)
		for {
			line, err := readLine(r, maxBridgeMessage)
			if errors.Is(err, errLineTooLong) {
				o.Logger.Debug("bridge: a message from the CLI is too long; dropped", "max", maxBridgeMessage)
				continue
			}
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()

	for {
		select {
		case <-ctx.Done():
			b.wg.Wait()
			if cause := context.Cause(ctx); errors.Is(cause, ErrCompanionGone) {
				return cause
			}
			return ctx.Err()
		case err := <-readErr:
			// The CLI closed its end: nobody reads answers any more, so
			// what is under way stops (a diff waiting in the editor is
			// closed there by the companion), and the session ends, as a
			// client that says goodbye ends it.
			cancel(nil)
			b.wg.Wait()
			b.end()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("gemkit ide bridge: read: %w", err)
		case line := <-lines:
			if b.failure != nil {
				b.refuse(line, b.failure)
				if isRequest(line) {
					return b.failure
				}
				continue
			}
			b.relay(ctx, line)
		}
	}
}

type bridge struct {
	log     *slog.Logger
	out     *lineWriter
	http    *http.Client
	url     string
	token   string
	failure error // set when the file could not be used
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	session  string
	protocol string
	stream   bool // the event stream was started
	wg       sync.WaitGroup
}

// rpcHead is what the bridge reads of a message to route it.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func head(line []byte) rpcHead {
	var h rpcHead
	_ = json.Unmarshal(line, &h)
	return h
}

func (h rpcHead) hasID() bool { return len(h.ID) > 0 && string(h.ID) != "null" }

func isRequest(line []byte) bool { h := head(line); return h.Method != "" && h.hasID() }

// relay sends one message from the CLI to the companion. initialize is
// sent alone (its answer carries the session); other requests run side
// by side (an openDiff may wait while a closeDiff goes); notifications
// and responses go in order, and once notifications/initialized has gone
// the event stream opens, as the real client's HTTP transport opens it.
func (b *bridge) relay(ctx context.Context, line []byte) {
	h := head(line)
	switch {
	case h.Method == "initialize":
		b.post(ctx, line, h)
	case h.Method != "" && h.hasID():
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.post(ctx, line, h)
		}()
	default:
		b.post(ctx, line, h)
		if h.Method == "notifications/initialized" {
			b.mu.Lock()
			start := !b.stream && b.session != ""
			b.stream = true
			b.mu.Unlock()
			if start {
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					b.listen(ctx)
				}()
			}
		}
	}
}

// request makes a request to the companion with the session's headers.
func (b *bridge) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.url, rd)
	if err != nil {
		return nil, err
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	b.mu.Lock()
	if b.session != "" {
		req.Header.Set(ide.HeaderSessionID, b.session)
	}
	if b.protocol != "" {
		req.Header.Set(ide.HeaderProtocolVersion, b.protocol)
	}
	b.mu.Unlock()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	return req, nil
}

// post sends one message and writes what the companion answers.
func (b *bridge) post(ctx context.Context, line []byte, h rpcHead) {
	req, err := b.request(ctx, http.MethodPost, line)
	if err != nil {
		b.refuse(line, err)
		return
	}
	resp, err := b.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		b.refuse(line, fmt.Errorf("gemkit ide bridge: the companion at %s cannot be reached: %w", b.url, err))
		if errors.Is(err, syscall.ECONNREFUSED) {
			b.cancel(ErrCompanionGone)
		}
		return
	}
	defer resp.Body.Close()
	if h.Method == "initialize" && resp.StatusCode == http.StatusOK {
		b.mu.Lock()
		b.session = resp.Header.Get(ide.HeaderSessionID)
		b.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		b.answer(resp, h)
	default:
		b.failed(resp, h)
	}
}

// answer writes the messages of a successful POST's body: one JSON value,
// or an event stream of them.
func (b *bridge) answer(resp *http.Response, h rpcHead) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		if err := readEvents(resp.Body, func(data []byte) { b.emit(data, h) }); err != nil {
			b.log.Debug("bridge: reading a response stream", "err", err)
		}
		return
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBridgeMessage))
	if err != nil {
		b.log.Debug("bridge: reading a response", "err", err)
		return
	}
	if len(bytes.TrimSpace(data)) > 0 {
		b.emit(data, h)
	}
}

// emit writes one message from the companion; the answer to initialize
// also tells the protocol version the next requests carry.
func (b *bridge) emit(data []byte, h rpcHead) {
	if h.Method == "initialize" {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &r) == nil && bytes.Equal(r.ID, h.ID) && r.Result.ProtocolVersion != "" {
			b.mu.Lock()
			b.protocol = r.Result.ProtocolVersion
			b.mu.Unlock()
		}
	}
	if err := b.out.writeJSON(data); err != nil {
		b.log.Debug("bridge: writing to the CLI", "err", err)
	}
}

// failed answers a request the companion refused with an HTTP error. The
// companion's JSON-RPC error carries no id (it could not tell the
// request's): the request's own id is put in, so that the CLI's request
// ends with the companion's words rather than waiting.
func (b *bridge) failed(resp *http.Response, h rpcHead) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	// A JSON-RPC error, or the HTTP guard's {"error": "words"}.
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	var rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	var words string
	msg := fmt.Sprintf("the companion answered HTTP %d", resp.StatusCode)
	code := -32000
	switch {
	case json.Unmarshal(data, &e) != nil || len(e.Error) == 0:
	case json.Unmarshal(e.Error, &rpcErr) == nil && rpcErr.Message != "":
		msg += ": " + rpcErr.Message
		if rpcErr.Code != 0 {
			code = rpcErr.Code
		}
	case json.Unmarshal(e.Error, &words) == nil && words != "":
		msg += ": " + words
	}
	b.log.Debug("bridge: refused", "method", h.Method, "status", resp.StatusCode, "msg", msg)
	if h.hasID() && h.Method != "" {
		b.writeError(h.ID, code, msg)
	}
	if resp.StatusCode == http.StatusNotFound || (resp.StatusCode == http.StatusBadRequest && strings.Contains(msg, "session")) {
		// The companion no longer knows the session (it restarted, or
		// ended the session): the CLI must connect again, as over HTTP.
		b.mu.Lock()
		known := b.session != ""
		b.mu.Unlock()
		if known {
			b.cancel(ErrCompanionGone)
		}
	}
}

// refuse answers a request that could not be sent with err's words.
func (b *bridge) refuse(line []byte, err error) {
	h := head(line)
	b.log.Debug("bridge: cannot relay", "method", h.Method, "err", err)
	if h.Method != "" && h.hasID() {
		b.writeError(h.ID, -32000, err.Error())
	}
}

func (b *bridge) writeError(id json.RawMessage, code int, msg string) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	_ = b.out.writeJSON(data)
}

// listen keeps the session's event stream open and writes each message it
// carries, reopening it when it ends, until the companion refuses it or
// goes away.
func (b *bridge) listen(ctx context.Context) {
	for failures := 0; ctx.Err() == nil; {
		req, err := b.request(ctx, http.MethodGet, nil)
		if err != nil {
			return
		}
		resp, err := b.http.Do(req)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			b.log.Debug("bridge: event stream", "err", err)
			if errors.Is(err, syscall.ECONNREFUSED) {
				b.cancel(ErrCompanionGone)
				return
			}
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			b.log.Debug("bridge: the companion offers no event stream")
			return
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest:
			resp.Body.Close()
			b.cancel(ErrCompanionGone)
			return
		case resp.StatusCode != http.StatusOK:
			resp.Body.Close()
			b.log.Debug("bridge: event stream refused", "status", resp.StatusCode)
		default:
			failures = 0
			err := readEvents(resp.Body, func(data []byte) { b.emit(data, rpcHead{}) })
			resp.Body.Close()
			b.log.Debug("bridge: event stream ended", "err", err)
		}
		failures++
		if failures > 5 {
			b.cancel(ErrCompanionGone)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
		}
	}
}

// end closes the session, as a client leaving says so (the companion
// would otherwise expire it once idle).
func (b *bridge) end() {
	b.mu.Lock()
	session := b.session
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := b.request(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	if resp, err := b.http.Do(req); err == nil {
		resp.Body.Close()
	}
}

// readEvents calls on with the data of each event of a server-sent event
// stream until it ends.
func readEvents(r io.Reader, on func(data []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	has := false
	for {
		line, err := readLine(br, maxBridgeMessage)
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0 && err == nil:
			if has {
				on(data)
			}
			data, has = nil, false
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, v...), true
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// errLineTooLong: a line longer than the bridge takes, read and dropped.
var errLineTooLong = errors.New("message too long")

// readLine reads one line without its newline; a line of more than max
// bytes is read to its end and dropped (errLineTooLong).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > max {
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over && err == nil {
			return nil, errLineTooLong
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// lineWriter writes one JSON message per line, whole, from any goroutine.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) writeJSON(data []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	buf.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(buf.Bytes())
	return err
}
