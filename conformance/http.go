package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/buildinfo"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// checkHTTP runs httpChecks against the endpoint. The requests of the
// MCP exchange share one 10 s budget.
func (e *env) checkHTTP() {
	// No proxy (the real CLI bypasses them for the companion:
	// createProxyAwareFetch in ide-connection-utils.ts) and no idle
	// connections left behind once the checks are done.
	e.h = rawHTTP{url: e.ep.URL(), token: e.ep.Token, hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}}
	e.proto = protocolOf(e.plan)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	e.mcpCtx = ctx
	e.run(httpChecks)
}

// refused is a check that a request with the headers hdr gives is
// refused with want, as the official companion refuses it; why says what
// serving it would allow.
func refused(hdr func(*env) map[string]string, want int, why string) func(*env) verdict {
	return func(e *env) verdict {
		got, err := e.status(hdr(e))
		switch {
		case err != nil:
			return failf("request failed: %v", err)
		case got == want:
			return passf("HTTP %d", got)
		case got >= 200 && got < 300:
			return failf("accepted with HTTP %d: %s", got, why)
		}
		return warnf("refused with HTTP %d; the official companion answers %d", got, want)
	}
}

// status is the HTTP status of an initialize request with the headers
// hdr.
func (e *env) status(hdr map[string]string) (int, error) {
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	resp, err := e.h.do(ctx, http.MethodPost, initializeBody(1, e.proto.version), hdr)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// The headers of the guard's checks.
func noToken(*env) map[string]string { return map[string]string{"Authorization": ""} }
func wrongToken(*env) map[string]string {
	return map[string]string{"Authorization": "Bearer not-the-token"}
}
func withOrigin(e *env) map[string]string {
	return e.h.auth(map[string]string{"Origin": "http://example.com"})
}
func foreignHost(e *env) map[string]string {
	return e.h.auth(map[string]string{"Host": net.JoinHostPort("evil.example", strconv.Itoa(e.ep.Port))})
}

// initialize sends initialize exactly as the real client sends it (the
// MCP SDK's Client.connect, called by IdeClient in ide-client.ts) and
// keeps the session for the checks that follow.
func (e *env) initialize() verdict {
	resp, err := e.h.do(e.mcpCtx, http.MethodPost, initializeBody(1, e.proto.version), e.h.auth(nil))
	if err != nil {
		return failf("%v", err).last()
	}
	session := resp.Header.Get(ide.HeaderSessionID)
	code := resp.StatusCode
	msg, err := readMessage(resp)
	var init struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	switch {
	case code != http.StatusOK:
		return failf("HTTP %d", code).last()
	case err != nil || json.Unmarshal(msg, &init) != nil || init.Result == nil:
		return failf("no initialize result (%v) %.200s", err, msg).last()
	case !slices.Contains(e.proto.supported, init.Result.ProtocolVersion):
		return failf("protocol version %q to a CLI that asked for %s; it speaks %s", init.Result.ProtocolVersion, e.proto.version, strings.Join(e.proto.supported, ", ")).last()
	case session == "":
		return failf("no %s header: the real CLI needs a session for its GET stream", ide.HeaderSessionID).last()
	}
	e.protoVersion = init.Result.ProtocolVersion
	e.sess = e.h.auth(map[string]string{ide.HeaderSessionID: session, ide.HeaderProtocolVersion: e.protoVersion})
	return passf("%s %s, protocol %s", init.Result.ServerInfo.Name, init.Result.ServerInfo.Version, e.protoVersion)
}

func (e *env) initialized() verdict {
	resp, err := e.h.do(e.mcpCtx, http.MethodPost, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, e.sess)
	if err != nil {
		return failf("%v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return failf("HTTP %d: the real CLI opens its GET stream only after a 202", resp.StatusCode)
	}
	return passf("")
}

func (e *env) sessionRequired() verdict {
	resp, err := e.h.do(e.mcpCtx, http.MethodPost, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, e.h.auth(map[string]string{ide.HeaderProtocolVersion: e.protoVersion}))
	if err != nil {
		return failf("request failed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return passf("HTTP %d", resp.StatusCode)
	}
	return failf("HTTP %d", resp.StatusCode)
}

// toolSchemas reads tools/list with the raw schemas.
func (e *env) toolSchemas() verdict {
	resp, err := e.h.do(e.mcpCtx, http.MethodPost, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, e.sess)
	if err != nil {
		return failf("%v", err)
	}
	msg, err := readMessage(resp)
	if err != nil {
		return failf("%v", err)
	}
	var lt struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	_ = json.Unmarshal(msg, &lt)
	schemas := map[string]json.RawMessage{}
	for _, t := range lt.Result.Tools {
		schemas[t.Name] = t.InputSchema
	}
	var probs []string
	if s, ok := schemas[ide.ToolOpenDiff]; !ok {
		probs = append(probs, "openDiff is not listed")
	} else {
		for _, p := range SchemaProblems(s, map[string]string{"filePath": "string", "newContent": "string"}, nil) {
			probs = append(probs, "openDiff: "+p)
		}
	}
	if s, ok := schemas[ide.ToolCloseDiff]; !ok {
		probs = append(probs, "closeDiff is not listed")
	} else {
		for _, p := range SchemaProblems(s, map[string]string{"filePath": "string"}, map[string]string{"suppressNotification": "boolean"}) {
			probs = append(probs, "closeDiff: "+p)
		}
	}
	if len(probs) > 0 {
		return failf("%s (without both tools the real CLI disables diffing)", strings.Join(probs, "; "))
	}
	return passf("")
}

// initialContext opens the GET stream: the real CLI expects the current
// context first (registerClientHandlers in ide-client.ts).
func (e *env) initialContext() verdict {
	sctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, e.h.url, nil)
	if err != nil {
		return failf("%v", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range e.sess {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return failf("GET failed: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed {
		return failf("GET answered 405: the real CLI then never receives context or diff answers")
	}
	if resp.StatusCode != http.StatusOK {
		return failf("GET answered HTTP %d: the real CLI marks itself disconnected", resp.StatusCode)
	}
	return firstEvent(resp.Body)
}

// firstEvent checks the first event of a GET stream other than a ping.
func firstEvent(body io.Reader) verdict {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), mcpwire.MaxEvent)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var n struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &n) != nil {
			return failf("an event that is not JSON: %.120s", data)
		}
		if n.Method == "ping" {
			continue
		}
		if n.Method != ide.MethodContextUpdate {
			return failf("the first event is %q", n.Method)
		}
		if probs := ContextProblems(n.Params); len(probs) > 0 {
			return failf("the context breaks the real CLI's schema (it would disconnect): %s", strings.Join(probs, "; "))
		}
		return passf("")
	}
	return failf("no ide/contextUpdate within 3 s of opening the stream")
}

// rawHTTP speaks to an HTTP companion without an MCP SDK, to see exactly
// what it answers.
type rawHTTP struct {
	url   string
	token string
	hc    *http.Client
}

func (h rawHTTP) do(ctx context.Context, method string, body any, hdr map[string]string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	return h.hc.Do(req)
}

func (h rawHTTP) auth(extra map[string]string) map[string]string {
	m := map[string]string{"Authorization": "Bearer " + h.token}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// protocol is what a CLI asks for at initialize and what it takes back.
type protocol struct {
	version   string
	supported []string
}

// protocolOf is the real CLI's: Gemini CLI 0.61.0 asks for and accepts
// 2025-06-18 only in practice (its SDK's latest); Qwen Code 0.24.4 asks
// for 2025-11-25 and accepts the versions its bundled MCP SDK lists
// (SUPPORTED_PROTOCOL_VERSIONS).
func protocolOf(p *client.Plan) protocol {
	if p.Agent == client.AgentQwen {
		return protocol{ide.QwenProtocolVersion, []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"}}
	}
	return protocol{ide.ProtocolVersion, []string{ide.ProtocolVersion}}
}

func initializeBody(id int, proto string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": "initialize", "params": map[string]any{
		"protocolVersion": proto, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "gemkit-ide-check", "version": buildinfo.Version()},
	}}
}

// readMessage reads the first JSON-RPC message with an id from a JSON or
// SSE response.
func readMessage(resp *http.Response) (json.RawMessage, error) {
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), mcpwire.MaxEvent)
		for sc.Scan() {
			line := sc.Text()
			if data, ok := strings.CutPrefix(line, "data:"); ok {
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal([]byte(strings.TrimSpace(data)), &m) == nil && len(m.ID) > 0 {
					return json.RawMessage(strings.TrimSpace(data)), nil
				}
			}
		}
		return nil, errors.New("the event stream ended without a response")
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, mcpwire.MaxMessage))
	if err != nil {
		return nil, err
	}
	return b, nil
}
