package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Encoding the tool list is most of what tools/list costs: mcp-go builds a
// map per tool and encodes it, about 1.6 ms for 250 tools, and the list
// changes only on reload. So the answer's result is encoded once per
// reload, here, in exactly mcp-go's bytes (TestFastList compares them for
// every protocol revision), in about a tenth of the time, and a tools/list
// request on stdio is answered from it before mcp-go sees it. The encoding
// doubles as the signature that tells a reload whether the tools changed.
//
// The revisions differ only in the envelope: up to 2025-11-25 the result
// is the tool list alone; from 2026-07-28 on, a request says its revision
// in its own _meta, and the result starts with mcp-go's _meta (serverInfo),
// resultType and the caching hints ttlMs and cacheScope (modernPrefix). A
// modern request that mcp-go would refuse (an unknown revision, no client
// capabilities) goes on to mcp-go, which answers with the error.

// encodeToolsList encodes the result of tools/list for tools as mcp-go
// does: tools sorted by name, each with its keys in sorted order
// (annotations, description, inputSchema, name, outputSchema) and its annotations in
// field order, strings escaped as encoding/json escapes them.
func encodeToolsList(tools []server.ServerTool) json.RawMessage {
	sorted := make([]*mcp.Tool, len(tools))
	for i := range tools {
		sorted[i] = &tools[i].Tool
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	b := make([]byte, 0, 512*len(tools))
	b = append(b, `{"tools":[`...)
	for i, t := range sorted {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"annotations":{`...)
		a := t.Annotations
		sep := ""
		field := func(name string) {
			b = append(b, sep...)
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, `":`...)
			sep = ","
		}
		if a.Title != "" {
			field("title")
			b = appendString(b, a.Title)
		}
		for _, h := range []struct {
			name string
			v    *bool
		}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v != nil {
				field(h.name)
				b = strconv.AppendBool(b, *h.v)
			}
		}
		b = append(b, '}')
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = appendString(b, t.Description)
		}
		b = append(b, `,"inputSchema":`...)
		b = append(b, t.RawInputSchema...)
		b = append(b, `,"name":`...)
		b = appendString(b, t.Name)
		if t.RawOutputSchema != nil {
			b = append(b, `,"outputSchema":`...)
			b = append(b, t.RawOutputSchema...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendString appends s as encoding/json encodes it (HTML characters
// escaped, invalid UTF-8 replaced).
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// modernPrefix is what mcp-go puts before "tools" in a tools/list result
// for a request of revision 2026-07-28 or later, ending with a comma: the
// result's _meta with the server's identity, resultType "complete", and
// its default caching hints (ttlMs 0, cacheScope private), which this
// server does not change.
func modernPrefix(name, version string) ([]byte, error) {
	var r mcp.ListToolsResult
	r.SetResultType(mcp.ResultTypeComplete)
	r.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: name, Version: version})
	r.SetCacheHints(0, mcp.CacheScopePrivate)
	r.Tools = []mcp.Tool{}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: encoding the tools/list envelope: %w", err)
	}
	head, _, ok := bytes.Cut(b, []byte(`"tools":[]`))
	if !ok {
		return nil, fmt.Errorf("mcpserver: mcp-go's tools/list result has no tools field: %s", b)
	}
	return head, nil
}

// listRequest is what fastList reads of a request line.
type listRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Cursor *string   `json:"cursor"`
		Meta   *mcp.Meta `json:"_meta"`
	} `json:"params"`
}

// modern reports whether the request is of revision 2026-07-28 or later
// (as mcp-go decides it, from the request's own _meta), and ok whether
// fastList may answer it: a modern request must name a revision mcp-go
// serves and carry the client's capabilities, or mcp-go answers it with
// an error.
func (r *listRequest) modern() (modern, ok bool) {
	if r.Params == nil {
		return false, true
	}
	v := r.Params.Meta.ProtocolVersion()
	if !mcp.IsModernProtocol(v) {
		return false, true
	}
	return true, mcp.IsValidProtocolVersion(v) && r.Params.Meta.ClientCapabilities() != nil
}

// fastList answers line on w when it is a tools/list request without a
// cursor and a cached answer exists, and reports whether it did.
func (s *Server) fastList(line []byte, w io.Writer) bool {
	if !bytes.Contains(line, []byte(`"tools/list"`)) {
		return false
	}
	cached := s.toolsList.Load()
	if cached == nil {
		return false
	}
	var req listRequest
	if json.Unmarshal(line, &req) != nil || req.Method != "tools/list" || req.JSONRPC != "2.0" ||
		len(req.ID) == 0 || string(req.ID) == "null" || (req.Params != nil && req.Params.Cursor != nil) {
		return false
	}
	modern, ok := req.modern()
	if !ok {
		return false
	}
	out := make([]byte, 0, len(*cached)+len(s.modernPrefix)+64)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, req.ID...)
	out = append(out, `,"result":`...)
	if modern {
		out = append(out, s.modernPrefix...)
		out = append(out, (*cached)[1:]...) // without its opening brace
	} else {
		out = append(out, *cached...)
	}
	out = append(out, "}\n"...)
	_, err := w.Write(out)
	return err == nil
}

// lockedWriter writes whole messages one at a time: mcp-go writes each
// message with a single Write, and so does fastList.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// listingReader passes stdin's lines on to mcp-go, except the tools/list
// requests fastList answers.
type listingReader struct {
	s       *Server
	src     *bufio.Reader
	out     io.Writer
	pending []byte
	err     error
}

func (r *listingReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, err := r.src.ReadBytes('\n')
		r.err = err
		if len(line) > 0 && !r.s.fastList(line, r.out) {
			r.pending = line
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
