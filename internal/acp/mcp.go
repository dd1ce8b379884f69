package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/proc"
)

// mcpConnectTimeout bounds starting and listing one MCP server.
const mcpConnectTimeout = 30 * time.Second

// maxToolName is the longest function name the model APIs take.
const maxToolName = 64

// mcpTools are the tools of the MCP servers a client passed in
// session/new, offered to the model as mcp_<server>_<tool> (as Gemini CLI
// names them), made unique and valid as function names.
type mcpTools struct {
	clients []*mcpServer
	decls   []model.ToolDecl
	byName  map[string]mcpTool
}

var _ agent.ToolSource = (*mcpTools)(nil)

type mcpTool struct {
	c            *mcpclient.Client
	server, tool string
}

// mcpServer is one connected server and how to let it go.
type mcpServer struct {
	c *mcpclient.Client
	// stop ends a stdio server's process after the session closed.
	stop func()
}

func (m *mcpServer) close() {
	m.c.Close()
	if m.stop != nil {
		m.stop()
	}
}

// connectMCP starts (stdio) or connects to (HTTP) each server and lists
// its tools. The spec makes connecting a MUST: one that fails fails the
// session, with the server's name in the error.
func connectMCP(ctx context.Context, servers []sdk.McpServer, cwd string, stderr io.Writer, log *slog.Logger) (*mcpTools, error) {
	t := &mcpTools{byName: map[string]mcpTool{}}
	for _, srv := range servers {
		name, m, err := dialMCP(ctx, srv, cwd, stderr)
		if err != nil {
			t.close()
			return nil, err
		}
		t.clients = append(t.clients, m)
		if err := t.add(ctx, name, m.c); err != nil {
			t.close()
			return nil, fmt.Errorf("MCP server %q: %w", name, err)
		}
		log.Debug("MCP server connected", "name", name)
	}
	return t, nil
}

// clientInfo is who gemkit's ACP agent says it is to an MCP server.
var clientInfo = mcpclient.Options{Name: "gemkit-acp", Version: "1"}

func dialMCP(ctx context.Context, srv sdk.McpServer, cwd string, stderr io.Writer) (string, *mcpServer, error) {
	ictx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	switch {
	case srv.Stdio != nil:
		st := srv.Stdio
		env := os.Environ()
		for _, e := range st.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		m, err := startStdio(ictx, st.Command, st.Args, env, cwd, stderr)
		if err != nil {
			return "", nil, fmt.Errorf("MCP server %q: %w", st.Name, err)
		}
		return st.Name, m, nil
	case srv.Http != nil:
		h := srv.Http
		header := http.Header{}
		for _, hd := range h.Headers {
			header.Add(hd.Name, hd.Value)
		}
		c, err := mcpclient.HTTP(ictx, h.Url, nil, header, clientInfo)
		if err != nil {
			return "", nil, fmt.Errorf("MCP server %q: connect %s: %w", h.Name, h.Url, err)
		}
		return h.Name, &mcpServer{c: c}, nil
	case srv.Sse != nil:
		return "", nil, fmt.Errorf("MCP server %q: gemkit does not connect to SSE servers (mcpCapabilities.sse is false); give its stdio command or its Streamable HTTP URL", srv.Sse.Name)
	default:
		return "", nil, fmt.Errorf("MCP server: gemkit connects to stdio and HTTP servers (mcpCapabilities.http); this one is neither")
	}
}

// stdioGrace is how long a stdio server has to end after its stdin
// closed before it is killed.
const stdioGrace = 2 * time.Second

// startStdio starts a stdio server in cwd and connects to it. Stop
// closes its stdin, which ends a well-behaved server, and kills it after
// stdioGrace otherwise.
func startStdio(ctx context.Context, command string, args, env []string, cwd string, stderr io.Writer) (*mcpServer, error) {
	cmd := exec.Command(command, args...)
	cmd.Env, cmd.Dir, cmd.Stderr = env, cwd, stderr
	cmd.WaitDelay = stdioGrace
	// A child gemkit owns: its own process group, ended with whatever it
	// started, and killed with gemkit however gemkit ends.
	proc.Own(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", command, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(stdioGrace):
			cmd.Process.Kill()
			<-exited
		}
		_ = proc.KillGroup(cmd)
	}
	c, err := mcpclient.Stdio(ctx, stdout, stdin, clientInfo)
	if err != nil {
		stop()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return &mcpServer{c: c, stop: stop}, nil
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })

func (t *mcpTools) add(ctx context.Context, server string, c *mcpclient.Client) error {
	lctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	tools, err := c.ListTools(lctx)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	for _, tool := range tools {
		name := t.unique(unsafeName().ReplaceAllString("mcp_"+server+"_"+tool.Name, "_"))
		schema := map[string]any{"type": "object"}
		var v map[string]any
		if json.Unmarshal(tool.InputSchema, &v) == nil && v != nil {
			schema = v
		}
		t.decls = append(t.decls, model.ToolDecl{Name: name, Description: tool.Description, Schema: schema})
		t.byName[name] = mcpTool{c: c, server: server, tool: tool.Name}
	}
	return nil
}

// unique cuts name to the models' limit and numbers it if it is taken.
func (t *mcpTools) unique(name string) string {
	base := name
	if len(base) > maxToolName {
		base = base[:maxToolName]
	}
	name = base
	for i := 2; ; i++ {
		if _, taken := t.byName[name]; !taken {
			return name
		}
		suffix := fmt.Sprintf("_%d", i)
		b := base
		if len(b)+len(suffix) > maxToolName {
			b = b[:maxToolName-len(suffix)]
		}
		name = b + suffix
	}
}

// Decls implements agent.ToolSource.
func (t *mcpTools) Decls() []model.ToolDecl { return t.decls }

var _ agent.ShortNames = (*mcpTools)(nil)

// ShortName implements agent.ShortNames: a model may call an MCP tool
// by the name its server gives it, without mcp_<server>_, when no other
// tool has that name.
func (t *mcpTools) ShortName(short string) []string {
	var out []string
	for _, d := range t.decls {
		if t.byName[d.Name].tool == short {
			out = append(out, d.Name)
		}
	}
	return out
}

// Call implements agent.ToolSource.
func (t *mcpTools) Call(ctx context.Context, name string, args json.RawMessage) (string, bool, error) {
	tool, ok := t.byName[name]
	if !ok {
		return "", false, fmt.Errorf("there is no MCP tool %q", name)
	}
	var a map[string]any
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a); err != nil {
			return "", false, fmt.Errorf("bad arguments: %v", err)
		}
	}
	if a == nil {
		a = map[string]any{}
	}
	res, err := tool.c.CallTool(ctx, tool.tool, a)
	if err != nil {
		return "", false, fmt.Errorf("MCP server %q: %w", tool.server, err)
	}
	text := res.Text("\n")
	if text == "" && res.Structured != nil {
		text = string(res.Structured)
	}
	return text, res.IsError, nil
}

func (t *mcpTools) close() {
	// Each stdio server's stop ends its process group: what it started
	// (npx's node, a shell's children) goes with it.
	for _, m := range t.clients {
		m.close()
	}
}
