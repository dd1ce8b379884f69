// Package mcpline is the benchmarks' MCP client: a lean newline-delimited
// JSON-RPC writer and reader over a server process's stdio. Every server
// a benchmark compares is asked through the same one, so that the
// client's own cost is the same on each side; and it times the moment an
// answer's line arrived, before any decoding, so that the figures time
// the server, not the client's JSON decoding of a large answer.
package mcpline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// Conn is one client of one server process.
type Conn struct {
	Cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	// Read is when the answer of the last request had arrived, before
	// this client decoded it.
	Read time.Time
}

// Start starts cmd (its stdin and stdout become the connection's pipes;
// its stderr is the caller's to set) and initializes a session with it
// (protocol revision 2025-06-18, which every server here speaks).
func Start(cmd *exec.Cmd) (*Conn, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Conn{Cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if _, err := c.Request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "1"}}); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.Notify("notifications/initialized"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Notify sends a notification without parameters.
func (c *Conn) Notify(method string) error {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	_, err := c.in.Write(append(b, '\n'))
	return err
}

// Request sends one request and reads lines until its answer, passing
// over notifications, the server's own requests and lines that are not
// JSON.
func (c *Conn) Request(method string, params any) (json.RawMessage, error) {
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		c.Read = time.Now()
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != c.id || m.Method != "" {
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error)
		}
		return m.Result, nil
	}
}

// Call calls a tool and returns its text parts joined, and whether the
// server said it failed.
func (c *Conn) Call(tool string, args any) (string, bool, error) {
	if args == nil {
		args = map[string]any{}
	}
	raw, err := c.Request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", false, err
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", false, fmt.Errorf("tools/call %s: %w", tool, err)
	}
	var text string
	for _, p := range r.Content {
		text += p.Text
	}
	return text, r.IsError, nil
}

// CloseStdin closes the server's input, as a client that goes does,
// without waiting for the process.
func (c *Conn) CloseStdin() { c.in.Close() }

// Close ends the session the way a client does: stdin closed, then the
// process waited for, killed if it lingers past 10 s.
func (c *Conn) Close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.Cmd.Process.Kill()
		<-done
	}
}
