package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/mcpwire"
)

// The tool list changes only on reload, and a client asks for it at once
// after connecting (Gemini CLI before its first prompt). So its result is
// encoded once per reload, here, in exactly the SDK's bytes (TestFastList
// compares them), and a tools/list request on stdio is answered from it
// before the SDK sees the line. The encoding doubles as the signature that
// tells a reload whether the tools changed.
//
// Only requests of the revisions up to 2025-11-25 are answered here: from
// 2026-07-28 on a request carries its revision, the client's identity and
// capabilities in its own _meta, which the SDK checks and answers with an
// envelope of its own, so those go on to it.

// encodeToolsList encodes the result of tools/list for tools as the SDK
// does: tools sorted by name, the caching hints of cacheable, HTML
// characters not escaped.
func encodeToolsList(tools []served) json.RawMessage {
	sorted := make([]*mcp.Tool, len(tools))
	for i := range tools {
		sorted[i] = tools[i].tool
	}
	slices.SortFunc(sorted, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	res := &mcp.ListToolsResult{Tools: sorted}
	cacheable(nil, nil, &res.Cacheable)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		// Every schema was JSON when it was read; a tool list that cannot
		// be encoded is left to the SDK, which says why.
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// cacheable sets the caching hints of every list result (the SDK's
// ServerOptions.SetCacheable): stale at once, since a reload may change
// it any time (and says so with list_changed), and private, since it is
// what this person has installed.
func cacheable(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	c.TTLMs = 0
	c.CacheScope = "private"
}

// fastList answers line on w when it is a tools/list request of a
// revision up to 2025-11-25 without a cursor and a cached answer exists,
// and reports whether it did.
func (s *Server) fastList(line []byte, w io.Writer) bool {
	if !bytes.Contains(line, []byte(`"tools/list"`)) {
		return false
	}
	cached := s.toolsList.Load()
	if cached == nil || len(*cached) == 0 || !s.serversListed() {
		return false
	}
	// Members by their exact names, as the SDK reads them.
	req, err := mcpwire.Read(line)
	if err != nil || !req.Is("tools/list") || req.JSONRPC != "2.0" {
		return false
	}
	// The id as the SDK writes it back; one it would refuse is its own.
	id, ok := req.WireID()
	if !ok {
		return false
	}
	if p, err := mcpwire.ReadParams(req.Params); err != nil || p.Cursor != nil || !p.Plain() {
		return false
	}
	out := make([]byte, 0, len(*cached)+64)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, *cached...)
	out = append(out, "}\n"...)
	_, err = w.Write(out)
	return err == nil
}

// lockedWriter writes whole messages one at a time: the SDK writes each
// message with a single Write, and so does fastList. Each goes by order,
// when set, which waits for some answers.
type lockedWriter struct {
	mu    sync.Mutex
	w     io.Writer
	order *stdioOrder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.order != nil {
		l.order.wrote(p, err)
	}
	return n, err
}

// Close does nothing: the writer is the process's stdout, which outlives
// the session.
func (l *lockedWriter) Close() error { return nil }

// listingReader passes stdin's lines on to the SDK, except the tools/list
// requests fastList answers, once the SDK answered the session's
// initialize (order), and the tools/call requests fastCall does, once
// the client then said it is initialized: before, a request is the
// SDK's to refuse. It keeps the session's order as the lines come
// (order, session.go). Calls under way run under ctx. It holds
// at most mcpwire.MaxMessage bytes of a line: the rest of a longer one
// goes on to the SDK as it comes, unread, and the SDK, whose bound is
// the same, refuses it.
type listingReader struct {
	s       *Server
	ctx     context.Context
	src     *bufio.Reader
	out     io.Writer
	order   stdioOrder
	pending []byte
	err     error
	// initialized: the client said it is initialized after the answer to
	// its initialize. A client that sends the two without waiting for
	// the answer gets its calls answered by the SDK, as they all were.
	initialized bool
	long        bool // the line under way ran over mcpwire.MaxMessage
	calls       fastCalls
}

func (r *listingReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		// An initialize or server/discover passed on is answered before
		// the next line is read (session.go).
		r.order.wait(r.ctx)
		// The line is src's buffer until the next readLine, which comes
		// once pending is read: what the fast paths keep of it they copy.
		line, long, err := readLine(r.src, mcpwire.MaxMessage)
		r.err = err
		if len(line) == 0 {
			continue
		}
		// The rest of an overlong line is not a message.
		tail := r.long
		r.long = long
		if tail || long {
			r.pending = line
			continue
		}
		answered := r.order.initialized.Load()
		if answered && !r.initialized && isMethod(line, "notifications/initialized") {
			r.initialized = true
		}
		r.s.cancelled(&r.calls, line)
		if (answered && r.s.fastList(line, r.out)) || (r.initialized && !r.order.elicits.Load() && r.s.fastCall(r.ctx, &r.calls, line, r.out)) {
			continue
		}
		if line = screen(line, r.out, r.s.badLine); len(line) == 0 || r.order.passOn(line, r.out) {
			continue
		}
		r.pending = line
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// readLine reads src's next line, its newline included, or the first
// bytes of it once they run over max (long), whose rest the next calls
// read. A line that fits src's buffer is not copied out of it: it holds
// until src is read again.
func readLine(src *bufio.Reader, max int) (line []byte, long bool, err error) {
	chunk, err := src.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return chunk, false, err
	}
	line = append(line, chunk...)
	for len(line) <= max {
		chunk, err := src.ReadSlice('\n')
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, false, err
		}
	}
	return line, true, nil
}

// isMethod says whether line is a message of method, its members read
// by their exact names, as the SDK reads them.
func isMethod(line []byte, method string) bool {
	if !bytes.Contains(line, []byte(`"`+method+`"`)) {
		return false
	}
	m, err := mcpwire.Read(line)
	return err == nil && m.Is(method)
}

// badLine logs a line of the client's that screen answered with an
// error: a person typing at gemkit mcp sees why on stderr too.
func (s *Server) badLine(problem string) {
	s.log.Warn("a line from the client is not a JSON-RPC message; answered with an error", "problem", problem)
}

// Close does nothing: the reader is the process's stdin.
func (r *listingReader) Close() error { return nil }
