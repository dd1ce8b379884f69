package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gemkit/gemkit/internal/agent"
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
	clients []*mcpclient.Client
	// cmds are the stdio servers' processes, whose groups close ends
	// (proc.KillGroup) with whatever they started.
	cmds   []*exec.Cmd
	decls  []model.ToolDecl
	byName map[string]mcpTool
}

var _ agent.ToolSource = (*mcpTools)(nil)

type mcpTool struct {
	c            *mcpclient.Client
	server, tool string
}

// connectMCP starts (stdio) or connects to (HTTP) each server and lists
// its tools. The spec makes connecting a MUST: one that fails fails the
// session, with the server's name in the error.
func connectMCP(ctx context.Context, servers []sdk.McpServer, cwd string, stderr io.Writer, log *slog.Logger) (*mcpTools, error) {
	t := &mcpTools{byName: map[string]mcpTool{}}
	for _, srv := range servers {
		name, c, cmd, err := dialMCP(ctx, srv, cwd, stderr)
		if cmd != nil {
			t.cmds = append(t.cmds, cmd)
		}
		if err != nil {
			t.close()
			return nil, err
		}
		t.clients = append(t.clients, c)
		if err := t.add(ctx, name, c); err != nil {
			t.close()
			return nil, fmt.Errorf("MCP server %q: %w", name, err)
		}
		log.Debug("MCP server connected", "name", name)
	}
	return t, nil
}

// dialMCP connects to one server. A stdio server's process is started
// as a child gemkit owns (proc.Own), and returned whenever it started,
// even with an error, so that its group can be ended.
func dialMCP(ctx context.Context, srv sdk.McpServer, cwd string, stderr io.Writer) (string, *mcpclient.Client, *exec.Cmd, error) {
	var c *mcpclient.Client
	var name string
	var started *exec.Cmd
	switch {
	case srv.Stdio != nil:
		st := srv.Stdio
		name = st.Name
		env := os.Environ()
		for _, e := range st.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		tr := transport.NewStdioWithOptions(st.Command, env, st.Args,
			transport.WithCommandStderrWriter(stderr),
			transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
				cmd := exec.CommandContext(ctx, command, args...)
				cmd.Env, cmd.Dir = env, cwd
				proc.Own(cmd)
				started = cmd
				return cmd, nil
			}))
		if err := tr.Start(context.Background()); err != nil {
			return "", nil, started, fmt.Errorf("MCP server %q: start %s: %w", name, st.Command, err)
		}
		c = mcpclient.NewClient(tr)
	case srv.Http != nil:
		h := srv.Http
		name = h.Name
		headers := map[string]string{}
		for _, hd := range h.Headers {
			headers[hd.Name] = hd.Value
		}
		tr, err := transport.NewStreamableHTTP(h.Url, transport.WithHTTPHeaders(headers))
		if err != nil {
			return "", nil, nil, fmt.Errorf("MCP server %q: %w", name, err)
		}
		c = mcpclient.NewClient(tr)
		if err := c.Start(context.Background()); err != nil {
			return "", nil, nil, fmt.Errorf("MCP server %q: connect %s: %w", name, h.Url, err)
		}
	case srv.Sse != nil:
		return "", nil, nil, fmt.Errorf("MCP server %q: gemkit does not connect to SSE servers (mcpCapabilities.sse is false); give its stdio command or its Streamable HTTP URL", srv.Sse.Name)
	default:
		return "", nil, nil, fmt.Errorf("MCP server: gemkit connects to stdio and HTTP servers (mcpCapabilities.http); this one is neither")
	}
	ictx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "gemkit-acp", Version: "1"}
	if _, err := c.Initialize(ictx, req); err != nil {
		c.Close()
		return "", nil, started, fmt.Errorf("MCP server %q: initialize: %w", name, err)
	}
	return name, c, started, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func (t *mcpTools) add(ctx context.Context, server string, c *mcpclient.Client) error {
	lctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	res, err := c.ListTools(lctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	for _, tool := range res.Tools {
		name := t.unique(unsafeName.ReplaceAllString("mcp_"+server+"_"+tool.Name, "_"))
		schema := map[string]any{"type": "object"}
		if raw, err := json.Marshal(tool); err == nil {
			var v struct {
				InputSchema map[string]any `json:"inputSchema"`
			}
			if json.Unmarshal(raw, &v) == nil && v.InputSchema != nil {
				schema = v.InputSchema
			}
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
	req := mcp.CallToolRequest{}
	req.Params.Name = tool.tool
	req.Params.Arguments = a
	res, err := tool.c.CallTool(ctx, req)
	if err != nil {
		return "", false, fmt.Errorf("MCP server %q: %w", tool.server, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(tc.Text)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		b.Write(data)
	}
	return b.String(), res.IsError, nil
}

func (t *mcpTools) close() {
	for _, c := range t.clients {
		c.Close()
	}
	// What a server started (npx's node, a shell's children) goes with
	// it.
	for _, cmd := range t.cmds {
		proc.KillGroup(cmd)
	}
}
