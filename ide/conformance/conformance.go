// Package conformance checks that a Gemini CLI IDE companion works with the
// real CLI (IdeClient in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts and the official companion's gemini-cli
// 0.61.0 packages/vscode-ide-companion/src/ide-server.ts): its discovery
// file, its HTTP guard (token, Host, Origin), its MCP session, tools and
// notifications, and its diff tools. Each check passes or fails with a reason
// a companion's author can act on.
package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/client"
	"github.com/gemkit/gemkit/internal/buildinfo"
)

// Outcome of one check.
type Outcome string

// Outcomes.
const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	Warn Outcome = "warn"
	Skip Outcome = "skip"
)

// Result is one check's outcome.
type Result struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

// Report is a whole run.
type Report struct {
	// File is the discovery file checked, Endpoint how it was reached.
	File     string   `json:"file,omitempty"`
	Endpoint string   `json:"endpoint,omitempty"`
	Results  []Result `json:"results"`
}

// Failed counts the failed checks.
func (r *Report) Failed() int {
	n := 0
	for _, x := range r.Results {
		if x.Outcome == Fail {
			n++
		}
	}
	return n
}

// Get returns the result of check id, if it ran.
func (r *Report) Get(id string) (Result, bool) {
	for _, x := range r.Results {
		if x.ID == id {
			return x, true
		}
	}
	return Result{}, false
}

func (r *Report) add(id, title string, o Outcome, detail string, args ...any) {
	if len(args) > 0 {
		detail = fmt.Sprintf(detail, args...)
	}
	r.Results = append(r.Results, Result{ID: id, Title: title, Outcome: o, Detail: detail})
}

// Options configure Run.
type Options struct {
	// Client finds and reaches the companion as the CLI would.
	Client client.Options
	// Interactive adds the accept and reject round trips, in which the
	// person answers diffs in the editor; Out receives the instructions.
	Interactive bool
	Out         io.Writer
	// AnswerTimeout bounds each interactive answer; default 5 minutes.
	AnswerTimeout time.Duration
	// Settle is how long to watch for notifications that must not come;
	// default 300 ms.
	Settle time.Duration
}

// Run checks the companion the CLI would pick from the options' directory.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.AnswerTimeout == 0 {
		o.AnswerTimeout = 5 * time.Minute
	}
	if o.Settle == 0 {
		o.Settle = 300 * time.Millisecond
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	r := &Report{}
	plan, err := client.Discover(ctx, o.Client)
	if err != nil {
		return nil, err
	}
	if plan.Agent == client.AgentQwen {
		checkQwenDiscovery(r, plan)
	} else {
		checkDiscovery(r, plan)
	}
	var ep *client.Endpoint
	for i := range plan.Endpoints {
		e := &plan.Endpoints[i]
		if e.Transport == "http" && (e.Port < 1 || e.Port > 65535) {
			continue
		}
		// An address the CLI cannot reach (inside a container Gemini CLI
		// dials host.docker.internal) sends it on to the next endpoint,
		// as a discovery file's stdio bridge expects: the checks follow.
		if e.Transport == "http" && i+1 < len(plan.Endpoints) {
			if err := reach(ctx, *e); err != nil {
				next := plan.Endpoints[i+1]
				o := Warn
				if next.Transport == "stdio" && next.Source == e.Source {
					o = Pass
				}
				r.add("connect.fallback", "The CLI reaches the companion", o, "%s cannot be reached (%v); the CLI goes on to %s", e.URL(), err, next)
				continue
			}
		}
		ep = e
		break
	}
	if ep == nil {
		if plan.Agent == client.AgentQwen {
			r.add("connect", "An endpoint to connect to", Fail, "neither a lock file nor %s/%s names a port or a stdio command", ide.EnvQwenServerPort, ide.EnvQwenServerStdioCmd)
		} else {
			r.add("connect", "An endpoint to connect to", Fail, "neither a discovery file nor %s/%s names a port or a stdio command", ide.EnvServerPort, ide.EnvServerStdioCmd)
		}
		return r, nil
	}
	r.Endpoint = ep.String()
	if ep.Transport == "http" {
		checkHTTP(ctx, r, *ep, protocolOf(plan))
	} else {
		r.add("http", "HTTP guard (token, Host, Origin)", Skip, "the companion is reached over stdio")
	}
	checkClient(ctx, r, plan, *ep, o)
	return r, nil
}

// reach dials an HTTP endpoint's address.
func reach(ctx context.Context, e client.Endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
	if err != nil {
		return err
	}
	return c.Close()
}

func checkDiscovery(r *Report, p *client.Plan) {
	const t = "discovery"
	if p.Choice == nil || p.Choice.Chosen == nil {
		detail := "no discovery file for this directory"
		if p.ChoiceErr != nil {
			detail = p.ChoiceErr.Error()
		}
		if p.Choice != nil {
			detail += fmt.Sprintf(" (%d files in %s, IDE pid %d)", len(p.Choice.Candidates), p.Choice.Dir, p.Choice.IDEPID)
		}
		r.add("discovery.file", "A discovery file the CLI would pick", Fail, "%s", detail)
		return
	}
	c := p.Choice.Chosen
	r.File = c.Path
	r.add("discovery.file", "A discovery file the CLI would pick", Pass, "%s: %s", c.Name, p.Choice.Reason)
	if c.Legacy {
		r.add("discovery.name", "File name gemini-ide-server-<pid>-<port>.json", Warn, "legacy name %s; current companions add the port", c.Name)
	} else if c.Port != c.Config.Port {
		r.add("discovery.name", "File name gemini-ide-server-<pid>-<port>.json", Fail, "the name says port %d, the content %q", c.Port, c.Config.PortText)
	} else {
		r.add("discovery.name", "File name gemini-ide-server-<pid>-<port>.json", Pass, "")
	}
	if c.Mode&0o077 != 0 {
		r.add("discovery.mode", "File mode 0600 (it holds the token)", Fail, "mode is %04o; other users can read the token", c.Mode)
	} else {
		r.add("discovery.mode", "File mode 0600 (it holds the token)", Pass, "%04o", c.Mode)
	}
	if c.Owner >= 0 && c.Owner != os.Getuid() {
		r.add("discovery.owner", "Owned by this user", Fail, "owned by uid %d", c.Owner)
	} else {
		r.add("discovery.owner", "Owned by this user", Pass, "")
	}
	if !c.Alive {
		r.add("discovery.pid", "The pid in the name runs", Warn, "pid %d is not running: a stale file?", c.PID)
	} else {
		r.add("discovery.pid", "The pid in the name runs", Pass, "pid %d", c.PID)
	}
	var probs []string
	for _, k := range slices.Sorted(maps.Keys(c.Config.Raw)) {
		if string(c.Config.Raw[k]) == "null" {
			probs = append(probs, k+" is null")
		}
	}
	want := map[string]string{"port": "number", "workspacePath": "string", "authToken": "string", "ideInfo": "object"}
	for _, k := range []string{"port", "workspacePath", "authToken", "ideInfo"} {
		v, ok := c.Config.Raw[k]
		if !ok {
			if k == "port" && c.Config.Stdio != nil {
				continue
			}
			probs = append(probs, k+" is missing")
			continue
		}
		if got := kind(v); got != want[k] && got != "null" {
			probs = append(probs, fmt.Sprintf("%s is a %s, not a %s", k, got, want[k]))
		}
	}
	if c.Config.Port != 0 && (c.Config.Port < 1 || c.Config.Port > 65535) {
		probs = append(probs, fmt.Sprintf("port %d is out of range", c.Config.Port))
	}
	if c.Config.AuthToken != nil && *c.Config.AuthToken == "" {
		probs = append(probs, "authToken is empty")
	}
	if c.Config.WorkspacePath != nil {
		for _, f := range strings.Split(*c.Config.WorkspacePath, string(os.PathListSeparator)) {
			if f != "" && !filepath.IsAbs(f) {
				probs = append(probs, fmt.Sprintf("workspace folder %q is not absolute", f))
			}
		}
	}
	if len(probs) > 0 {
		r.add("discovery.fields", "Fields port, workspacePath, authToken, ideInfo", Fail, "%s", strings.Join(probs, "; "))
	} else {
		r.add("discovery.fields", "Fields port, workspacePath, authToken, ideInfo", Pass, "")
	}
	if info := c.Config.IDEInfo; info == nil || info.Name == "" || info.DisplayName == "" {
		o := Fail
		if p.IDE != nil {
			o = Warn
		}
		r.add("discovery.ideInfo", "ideInfo names the editor", o, "without ideInfo {name, displayName} the real CLI connects only from terminals it knows (TERM_PROGRAM=vscode, sublime, Zed, ZED_SESSION_ID, XCODE_VERSION_ACTUAL, JetBrains)")
	} else {
		r.add("discovery.ideInfo", "ideInfo names the editor", Pass, "%s (%s)", info.DisplayName, info.Name)
	}
	if p.Workspace != nil {
		r.add("discovery.workspace", "The current directory is inside the workspace", Fail, "%v", p.Workspace)
	} else {
		r.add("discovery.workspace", "The current directory is inside the workspace", Pass, "workspace from the %s", p.WorkspaceSource)
	}
}

// checkQwenDiscovery checks the lock file Qwen Code would pick
// (IdeClient.getConnectionConfigFromFile in @qwen-code/qwen-code 0.24.4
// packages/core/src/ide/ide-client.ts): its name, mode, ppid (whose end
// makes Qwen Code delete it), fields and ideInfo, and the workspace.
func checkQwenDiscovery(r *Report, p *client.Plan) {
	ch := p.QwenChoice
	if ch == nil || ch.Chosen == nil {
		detail := "no Qwen Code lock file for this directory"
		if p.ChoiceErr != nil {
			detail = p.ChoiceErr.Error()
		}
		if ch != nil {
			detail += fmt.Sprintf(" (%d files in %s)", len(ch.Candidates), ch.Dir)
		}
		r.add("discovery.file", "A lock file Qwen Code would pick", Fail, "%s", detail)
		return
	}
	c := ch.Chosen
	r.File = c.Path
	r.add("discovery.file", "A lock file Qwen Code would pick", Pass, "%s: %s", c.Name, ch.Reason)
	switch {
	case c.Source != "scan" && c.Source != "env-port":
		r.add("discovery.name", "File name <port>.lock in Qwen Code's ide folder", Warn, "legacy file %s; current companions write <port>.lock", c.Path)
	case c.Config.PortText != "" && c.Name != c.Config.PortText+".lock":
		r.add("discovery.name", "File name <port>.lock in Qwen Code's ide folder", Fail, "the name is %s, the content's port %q", c.Name, c.Config.PortText)
	default:
		r.add("discovery.name", "File name <port>.lock in Qwen Code's ide folder", Pass, "")
	}
	if c.Mode&0o077 != 0 {
		r.add("discovery.mode", "File mode 0600 (it holds the token)", Fail, "mode is %04o; other users can read the token", c.Mode)
	} else {
		r.add("discovery.mode", "File mode 0600 (it holds the token)", Pass, "%04o", c.Mode)
	}
	if pid, ok := c.Config.PPID(); !ok {
		r.add("discovery.pid", "A ppid that lives as long as the companion", Warn, "no ppid: Qwen Code cannot tell a dead companion's file, and keeps it while its workspace folder exists")
	} else {
		r.add("discovery.pid", "A ppid that lives as long as the companion", Pass, "ppid %d runs", pid)
	}
	var probs []string
	want := map[string]string{"port": "number", "workspacePath": "string", "authToken": "string", "ideInfo": "object"}
	for _, k := range []string{"port", "workspacePath", "authToken", "ideInfo"} {
		v, ok := c.Config.Raw[k]
		if !ok {
			if k == "port" && c.Config.Stdio != nil {
				continue
			}
			probs = append(probs, k+" is missing")
			continue
		}
		if got := kind(v); got != want[k] {
			probs = append(probs, fmt.Sprintf("%s is a %s, not a %s", k, got, want[k]))
		}
	}
	if c.Config.AuthToken != nil && *c.Config.AuthToken == "" {
		probs = append(probs, "authToken is empty (Qwen Code has no token variable to fall back on)")
	}
	if len(probs) > 0 {
		r.add("discovery.fields", "Fields port, workspacePath, authToken, ideInfo", Fail, "%s", strings.Join(probs, "; "))
	} else {
		r.add("discovery.fields", "Fields port, workspacePath, authToken, ideInfo", Pass, "")
	}
	if info := c.Config.IDEInfo; info == nil || info.Name == "" || info.DisplayName == "" {
		o := Fail
		if p.IDE != nil {
			o = Warn
		}
		r.add("discovery.ideInfo", "ideInfo names the editor", o, "without ideInfo {name, displayName} Qwen Code connects only from VS Code's terminal (TERM_PROGRAM=vscode)")
	} else {
		r.add("discovery.ideInfo", "ideInfo names the editor", Pass, "%s (%s)", info.DisplayName, info.Name)
	}
	if p.Workspace != nil {
		r.add("discovery.workspace", "The current directory is inside the workspace", Fail, "%v", p.Workspace)
	} else {
		r.add("discovery.workspace", "The current directory is inside the workspace", Pass, "workspace from the %s", p.WorkspaceSource)
	}
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
		sc.Buffer(make([]byte, 64<<10), 16<<20)
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
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	return b, nil
}

func checkHTTP(ctx context.Context, r *Report, ep client.Endpoint, proto protocol) {
	// No proxy (the real CLI bypasses them for the companion:
	// createProxyAwareFetch in ide-connection-utils.ts) and no idle
	// connections left behind once the checks are done.
	h := rawHTTP{url: ep.URL(), token: ep.Token, hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}}
	status := func(hdr map[string]string) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := h.do(ctx, http.MethodPost, initializeBody(1, proto.version), hdr)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	expect := func(id, title string, hdr map[string]string, want int, why string) {
		got, err := status(hdr)
		switch {
		case err != nil:
			r.add(id, title, Fail, "request failed: %v", err)
		case got == want:
			r.add(id, title, Pass, "HTTP %d", got)
		case got >= 200 && got < 300:
			r.add(id, title, Fail, "accepted with HTTP %d: %s", got, why)
		default:
			r.add(id, title, Warn, "refused with HTTP %d; the official companion answers %d", got, want)
		}
	}
	expect("http.auth-missing", "A request without a token is refused", map[string]string{"Authorization": ""}, 401,
		"any local process or web page could drive the editor")
	expect("http.auth-wrong", "A request with a wrong token is refused", map[string]string{"Authorization": "Bearer not-the-token"}, 401,
		"the token is not checked")
	expect("http.origin", "A request with an Origin header is refused", h.auth(map[string]string{"Origin": "http://example.com"}), 403,
		"a web page in a browser could reach the companion")
	expect("http.host", "A request for a foreign Host is refused", h.auth(map[string]string{"Host": fmt.Sprintf("evil.example:%d", ep.Port)}), 403,
		"DNS rebinding could reach the companion")

	// initialize, exactly as the real client sends it (the MCP SDK's
	// Client.connect, called by IdeClient in ide-client.ts).
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := h.do(ictx, http.MethodPost, initializeBody(1, proto.version), h.auth(nil))
	if err != nil {
		r.add("mcp.initialize", "MCP initialize", Fail, "%v", err)
		return
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
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	switch {
	case code != http.StatusOK:
		r.add("mcp.initialize", "MCP initialize", Fail, "HTTP %d", code)
		return
	case err != nil || json.Unmarshal(msg, &init) != nil || init.Result == nil:
		r.add("mcp.initialize", "MCP initialize", Fail, "no initialize result (%v) %.200s", err, msg)
		return
	case !slices.Contains(proto.supported, init.Result.ProtocolVersion):
		r.add("mcp.initialize", "MCP initialize", Fail, "protocol version %q to a CLI that asked for %s; it speaks %s", init.Result.ProtocolVersion, proto.version, strings.Join(proto.supported, ", "))
		return
	case session == "":
		r.add("mcp.initialize", "MCP initialize", Fail, "no %s header: the real CLI needs a session for its GET stream", ide.HeaderSessionID)
		return
	}
	r.add("mcp.initialize", "MCP initialize", Pass, "%s %s, protocol %s", init.Result.ServerInfo.Name, init.Result.ServerInfo.Version, init.Result.ProtocolVersion)
	sess := h.auth(map[string]string{ide.HeaderSessionID: session, ide.HeaderProtocolVersion: init.Result.ProtocolVersion})
	if resp, err := h.do(ictx, http.MethodPost, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, sess); err != nil {
		r.add("mcp.initialized", "notifications/initialized is accepted (202)", Fail, "%v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			r.add("mcp.initialized", "notifications/initialized is accepted (202)", Fail, "HTTP %d: the real CLI opens its GET stream only after a 202", resp.StatusCode)
		} else {
			r.add("mcp.initialized", "notifications/initialized is accepted (202)", Pass, "")
		}
	}
	if resp, err := h.do(ictx, http.MethodPost, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, h.auth(map[string]string{ide.HeaderProtocolVersion: init.Result.ProtocolVersion})); err != nil {
		r.add("mcp.session-required", "A request without a session is refused", Fail, "request failed: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			r.add("mcp.session-required", "A request without a session is refused", Pass, "HTTP %d", resp.StatusCode)
		} else {
			r.add("mcp.session-required", "A request without a session is refused", Fail, "HTTP %d", resp.StatusCode)
		}
	}

	// tools/list with raw schemas.
	if resp, err := h.do(ictx, http.MethodPost, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, sess); err != nil {
		r.add("mcp.tools", "openDiff and closeDiff with the right schemas", Fail, "%v", err)
	} else if msg, err := readMessage(resp); err != nil {
		r.add("mcp.tools", "openDiff and closeDiff with the right schemas", Fail, "%v", err)
	} else {
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
			r.add("mcp.tools", "openDiff and closeDiff with the right schemas", Fail, "%s (without both tools the real CLI disables diffing)", strings.Join(probs, "; "))
		} else {
			r.add("mcp.tools", "openDiff and closeDiff with the right schemas", Pass, "")
		}
	}

	// The GET stream: the real CLI expects the current context first
	// (registerClientHandlers in ide-client.ts).
	checkStream(ctx, r, h, sess)
}

func checkStream(ctx context.Context, r *Report, h rawHTTP, sess map[string]string) {
	const id, title = "mcp.initial-context", "The GET stream starts with ide/contextUpdate"
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, h.url, nil)
	if err != nil {
		r.add(id, title, Fail, "%v", err)
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range sess {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		r.add(id, title, Fail, "GET failed: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed {
		r.add(id, title, Fail, "GET answered 405: the real CLI then never receives context or diff answers")
		return
	}
	if resp.StatusCode != http.StatusOK {
		r.add(id, title, Fail, "GET answered HTTP %d: the real CLI marks itself disconnected", resp.StatusCode)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
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
			r.add(id, title, Fail, "an event that is not JSON: %.120s", data)
			return
		}
		if n.Method == "ping" {
			continue
		}
		if n.Method != ide.MethodContextUpdate {
			r.add(id, title, Fail, "the first event is %q", n.Method)
			return
		}
		if probs := ContextProblems(n.Params); len(probs) > 0 {
			r.add(id, title, Fail, "the context breaks the real CLI's schema (it would disconnect): %s", strings.Join(probs, "; "))
			return
		}
		r.add(id, title, Pass, "")
		return
	}
	r.add(id, title, Fail, "no ide/contextUpdate within 3 s of opening the stream")
}

// notes collects the notifications the client sees during the diff checks.
type notes struct {
	mu   sync.Mutex
	list []note
}

type note struct {
	method string
	params json.RawMessage
}

func (n *notes) add(method string, params json.RawMessage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, note{method, params})
}

// about returns the diff notifications about path.
func (n *notes) about(path string) []note {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []note
	for _, x := range n.list {
		if x.method == ide.MethodContextUpdate {
			continue
		}
		var p struct {
			FilePath string `json:"filePath"`
		}
		if json.Unmarshal(x.params, &p) == nil && p.FilePath == path {
			out = append(out, x)
		}
	}
	return out
}

func checkClient(ctx context.Context, r *Report, plan *client.Plan, ep client.Endpoint, o Options) {
	seen := &notes{}
	co := o.Client
	co.Observe = seen.add
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, err := client.Dial(cctx, ep, co)
	if err != nil {
		r.add("client.connect", "Connects as the real CLI does", Fail, "%v", err)
		return
	}
	defer c.Close(context.Background())
	r.add("client.connect", "Connects as the real CLI does", Pass, "%s %s", c.Server().Name, c.Server().Version)
	if !c.DiffingEnabled() {
		r.add("client.diffing", "Diffing enabled (openDiff and closeDiff listed)", Fail, "tools: %v", toolNames(c.Tools()))
		return
	}
	r.add("client.diffing", "Diffing enabled (openDiff and closeDiff listed)", Pass, "")
	wctx, wcancel := context.WithTimeout(cctx, 3*time.Second)
	go func() {
		// A refused stream means no context will come: stop waiting.
		for wctx.Err() == nil && c.NotificationStream() {
			time.Sleep(20 * time.Millisecond)
		}
		wcancel()
	}()
	_, err = c.WaitContext(wctx)
	wcancel()
	switch {
	case !c.NotificationStream():
		r.add("client.context", "The client receives the editor's context", Fail, "the companion refused the GET stream (405): no context, and diffs never resolve")
	case err != nil && ep.Transport == "http":
		r.add("client.context", "The client receives the editor's context", Fail, "no ide/contextUpdate within 3 s: %v", err)
	case err == nil:
		r.add("client.context", "The client receives the editor's context", Pass, "")
	}

	dir := plan.Cwd
	if plan.WorkspacePath != nil {
		for _, f := range strings.Split(*plan.WorkspacePath, string(os.PathListSeparator)) {
			if f != "" {
				dir = f
				break
			}
		}
	}
	probe := func() string { return filepath.Join(dir, ide.CheckProbePrefix+randomHex()+".txt") }

	// closeDiff of a file without a diff.
	{
		const id, title = "diff.close-none", "closeDiff without a diff answers {\"content\": null}"
		path := probe()
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		text, err := c.CloseDiffText(sctx, path)
		cancel()
		switch {
		case err != nil:
			r.add(id, title, Fail, "%v", stepErr(err))
		default:
			if _, ok, perr := client.ParseCloseDiffText(text); perr != nil {
				r.add(id, title, Fail, "%v", perr)
			} else if ok {
				r.add(id, title, Fail, "content returned for a file with no diff: %.80s", *text)
			} else {
				r.add(id, title, Pass, "")
			}
		}
	}

	// openDiff, then closeDiff from the CLI side: the proposal comes back
	// and no accept or reject notification is sent.
	{
		const id, title = "diff.open-close", "openDiff is acknowledged; closeDiff returns the proposal without a notification"
		path := probe()
		proposal := "gemkit ide check\nproposal " + randomHex() + "\n"
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		defer cancel()
		d, err := c.StartDiff(sctx, path, proposal)
		if err != nil {
			r.add(id, title, Fail, "%v", stepErr(err))
		} else {
			text, err := c.CloseDiffText(sctx, path)
			var content string
			var ok bool
			if err == nil {
				content, ok, err = client.ParseCloseDiffText(text)
			}
			time.Sleep(o.Settle)
			d.Abandon()
			extra := seen.about(path)
			switch {
			case err != nil:
				r.add(id, title, Fail, "closeDiff: %v", stepErr(err))
			case !ok:
				r.add(id, title, Fail, "closeDiff says no diff was open (text %.80q)", deref(text))
			case content != proposal:
				r.add(id, title, Fail, "closeDiff returned %.80q, not the proposal", content)
			case len(extra) > 0:
				r.add(id, title, Fail, "closeDiff also sent %s: the real CLI resolves the diff itself and the notification races it", extra[0].method)
			default:
				r.add(id, title, Pass, "")
			}
		}
	}

	if !o.Interactive {
		r.add("diff.accept", "Accepting in the editor sends ide/diffAccepted with the final text", Skip, "run with --interactive")
		r.add("diff.reject", "Rejecting in the editor sends ide/diffRejected", Skip, "run with --interactive")
		return
	}
	interactive(ctx, r, c, seen, probe, o)
}

func interactive(ctx context.Context, r *Report, c *client.Client, seen *notes, probe func() string, o Options) {
	{
		const id, title = "diff.accept", "Accepting in the editor sends ide/diffAccepted with the final text"
		path := probe()
		actx, cancel := context.WithTimeout(ctx, o.AnswerTimeout)
		out, err := askInEditor(actx, c, path, "gemkit ide check: accept me\n", o.Out, "ACCEPT it there (you may edit the right side first).")
		cancel()
		switch {
		case err != nil:
			r.add(id, title, Fail, "%v", err)
		case !out.Accepted:
			r.add(id, title, Fail, "the diff was rejected; accept it to pass this check")
		default:
			probs := []string{}
			for _, n := range seen.about(path) {
				if n.method == ide.MethodDiffAccepted {
					probs = append(probs, DiffNotificationProblems(n.params, true)...)
				}
			}
			if len(probs) > 0 {
				r.add(id, title, Fail, "%s", strings.Join(probs, "; "))
			} else {
				r.add(id, title, Pass, "final text %d bytes", len(out.Content))
			}
		}
	}
	{
		const id, title = "diff.reject", "Rejecting in the editor sends ide/diffRejected"
		path := probe()
		actx, cancel := context.WithTimeout(ctx, o.AnswerTimeout)
		out, err := askInEditor(actx, c, path, "gemkit ide check: reject me\n", o.Out, "REJECT it there (or close its tab).")
		cancel()
		switch {
		case err != nil:
			r.add(id, title, Fail, "%v", err)
		case out.Accepted:
			r.add(id, title, Fail, "the diff was accepted; reject it to pass this check")
		default:
			legacy := false
			for _, n := range seen.about(path) {
				legacy = legacy || n.method == ide.MethodDiffClosed
			}
			if legacy {
				r.add(id, title, Warn, "the companion sent the legacy ide/diffClosed; current clients expect ide/diffRejected")
			} else {
				r.add(id, title, Pass, "")
			}
		}
	}
}

// askInEditor shows a diff and, once the companion says it is shown, asks
// the person to answer it; then it waits for the answer.
func askInEditor(ctx context.Context, c *client.Client, path, proposal string, out io.Writer, ask string) (client.DiffOutcome, error) {
	d, err := c.StartDiff(ctx, path, proposal)
	if err != nil {
		return client.DiffOutcome{}, err
	}
	fmt.Fprintf(out, "\nA diff of %s is open in your editor.\n%s\n", path, ask)
	return d.Wait(ctx)
}

// stepTimeout bounds each diff call of a check.
const stepTimeout = 10 * time.Second

// stepErr explains a diff call that ran out of time.
func stepErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: does the companion's editor answer? (%w)", stepTimeout, err)
	}
	return err
}

func toolNames(ts []client.Tool) []string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return "<no text block>"
	}
	return *s
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
