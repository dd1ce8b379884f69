package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

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

// mcpClient is the one Go MCP client the harness connects to each
// companion, speaking the protocol version the real Gemini CLI speaks and
// receiving its custom notifications.
type mcpClient struct {
	c        *client.Client
	contexts chan contextEvent
	diffs    chan diffEvent
}

func connect(ctx context.Context, f ide.DiscoveryFile) (*mcpClient, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d%s", f.Port, ide.MCPPath)
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + f.AuthToken}),
		transport.WithContinuousListening(),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		return nil, err
	}
	mc := &mcpClient{
		c:        client.NewClient(tr, client.WithProtocolVersion(ide.ProtocolVersion)),
		contexts: make(chan contextEvent, 4096),
		diffs:    make(chan diffEvent, 4096),
	}
	mc.c.OnNotification(mc.onNotification)
	if err := mc.c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start client: %w", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = ide.ProtocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "gemkit-bench", Version: "1"}
	res, err := mc.c.Initialize(ctx, req)
	if err != nil {
		mc.c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if res.ProtocolVersion != ide.ProtocolVersion {
		mc.c.Close()
		return nil, fmt.Errorf("negotiated protocol %q, want %q", res.ProtocolVersion, ide.ProtocolVersion)
	}
	// The first GET stream brings the current context: once it is here,
	// notifications flow.
	select {
	case <-mc.contexts:
	case <-time.After(10 * time.Second):
		mc.c.Close()
		return nil, fmt.Errorf("no context on the first GET stream within 10s")
	}
	return mc, nil
}

func (mc *mcpClient) close() { mc.c.Close() }

// onNotification stamps each notification on arrival, before decoding it.
func (mc *mcpClient) onNotification(n mcp.JSONRPCNotification) {
	at := time.Now()
	b, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	switch n.Method {
	case ide.MethodContextUpdate:
		var c ide.Context
		if json.Unmarshal(b, &c) != nil {
			return
		}
		select {
		case mc.contexts <- contextEvent{at, c}:
		default:
		}
	case ide.MethodDiffAccepted, ide.MethodDiffRejected:
		var d ide.DiffRejected
		if json.Unmarshal(b, &d) != nil {
			return
		}
		select {
		case mc.diffs <- diffEvent{at, n.Method, d.FilePath}:
		default:
		}
	}
}

// openDiff calls the openDiff tool and returns how long the ack took.
func (mc *mcpClient) openDiff(ctx context.Context, path, content string) (time.Duration, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = ide.ToolOpenDiff
	req.Params.Arguments = map[string]any{"filePath": path, "newContent": content}
	start := time.Now()
	res, err := mc.c.CallTool(ctx, req)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if res.IsError {
		return 0, fmt.Errorf("openDiff returned an error: %+v", res.Content)
	}
	return d, nil
}

// waitDiff waits for the outcome of the diff of path.
func (mc *mcpClient) waitDiff(path string, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case d := <-mc.diffs:
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
func (mc *mcpClient) waitContext(path string, line int, timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case e := <-mc.contexts:
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
func (mc *mcpClient) drain() {
	for {
		select {
		case <-mc.contexts:
		case <-mc.diffs:
		default:
			return
		}
	}
}
