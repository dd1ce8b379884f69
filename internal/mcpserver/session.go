package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/mcpwire"
)

// A session's order. Up to revision 2025-11-25 a session begins with
// initialize, and until its answer the client sends nothing but pings
// (MCP's lifecycle); from 2026-07-28 on each request carries its
// revision in _meta and server/discover may come first. The SDK refuses
// most requests before initialize, a second initialize and a
// notifications/initialized out of its place, and ignores answers to
// requests it never sent and cancels of ids it does not know. gemkit
// refuses the rest of what comes out of order: the requests the SDK lets
// through before initialize (logging/setLevel, resources/subscribe and
// resources/unsubscribe, which would reach the extensions' servers), and
// a server/discover on a session that began with initialize (it would
// replace the client's capabilities of initialize with those of its
// _meta). A refused request is answered with an error, and the session
// goes on.
//
// The SDK decides whether a session is initialized in the order the
// messages came, but it runs a request's middleware and handler beside
// the next messages: a logging/setLevel followed at once by an
// initialize would be judged by the state after that initialize. On
// stdio, where the order is the line's, the reader (listingReader) waits
// after passing on an initialize or a server/discover until it is
// answered, so that every later line meets the state those made, and
// refuses those three requests itself while the session is not
// initialized (stdioOrder). The stdio fast paths (fastlist.go,
// fastcall.go) answer only once the session's initialize was answered.

// handshake is the outermost receiving middleware: it refuses what
// comes out of the session's order (outOfOrder), and gives the answer
// to initialize or server/discover (Claude Code 2.1.330 connects with
// it) the instructions, as the summary is when the client connects
// rather than when the server started.
func (s *Server) handshake(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		o, _ := ctx.Value(stdioOrderKey{}).(*stdioOrder)
		if err := outOfOrder(method, req, o); err != nil {
			return nil, err
		}
		res, err := next(ctx, method, req)
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && o != nil && ss.InitializeParams() != nil {
			o.started.Store(true)
		}
		if err != nil {
			// The SDK's handlers return a nil result of their type beside
			// an error (a second initialize's *InitializeResult), which is
			// no nil interface: nothing is read of it.
			return nil, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			if r == nil {
				break
			}
			r.Instructions = s.Instructions()
			s.declareCompletions(r.Capabilities)
			if o != nil {
				o.initialized.Store(true)
			}
		case *mcp.DiscoverResult:
			if r == nil {
				break
			}
			r.Instructions = s.Instructions()
			s.declareCompletions(r.Capabilities)
		}
		return res, nil
	}
}

// outOfOrder is the error answering a request that comes out of its
// session's order where the SDK would take it, or nil; o is the order of
// a stdio session, nil for one of Streamable HTTP.
func outOfOrder(method string, req mcp.Request, o *stdioOrder) error {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || strings.HasPrefix(method, "notifications/") {
		return nil
	}
	// The SDK sets these before a request reaches its middleware: at
	// initialize, or from the _meta of a request of 2026-07-28 or later.
	p := ss.InitializeParams()
	switch {
	case p == nil && method != "initialize" && method != "ping" && method != "server/discover":
		// The SDK's own words for the requests it refuses so.
		return fmt.Errorf("method %q is invalid during session initialization", method)
	case p != nil && method == "server/discover" && beganWithInitialize(p, o):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"server/discover is of revisions from %s on, and this session began with initialize: a session keeps the revision it began with; start a new session to discover",
			mcpwire.Stateless)}
	}
	return nil
}

// beganWithInitialize reports whether the session whose initialize
// parameters are p began with initialize rather than with a request of
// 2026-07-28 or later. On stdio its reader knows; on Streamable HTTP the
// revision the client asked for at initialize tells (the SDK keeps that,
// not the one it answered), and one that asked for 2026-07-28 or later
// there is taken for a session of that era.
func beganWithInitialize(p *mcp.InitializeParams, o *stdioOrder) bool {
	if o != nil {
		return o.initialized.Load()
	}
	return !mcpwire.IsStateless(p.ProtocolVersion)
}

// stdioOrder is what a stdio session's reader (listingReader) knows of
// its session's order: from the SDK's handling, carried in the context
// the session's requests are handled under, and from the answers
// written (lockedWriter).
type stdioOrder struct {
	// initialized: the session's initialize was answered with a result.
	initialized atomic.Bool
	// started: the SDK has the session initialized, of either era.
	started atomic.Bool
	// elicits: the client declared elicitation, so that its calls of the
	// extensions' servers go through the SDK, which can ask it
	// (extask.go), not the fast path.
	elicits atomic.Bool

	mu sync.Mutex
	// await is the id of the request whose answer the reader waits for,
	// as the SDK writes it; answered is closed once it is written, or
	// once a write failed.
	await    []byte
	answered chan struct{}
}

type stdioOrderKey struct{}

// beforeStart are the requests the SDK lets through before a session is
// initialized, besides initialize and ping.
var beforeStart = []string{"logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// passOn is what the reader does with line, which goes on to the SDK
// unless passOn answered it, on w, and reports so: one of beforeStart
// of the revisions up to 2025-11-25 (a request of 2026-07-28 carries
// its revision, and the SDK refuses those three in it), while the
// session is not initialized, is refused in the SDK's words for the
// others. An initialize or a server/discover is awaited: the next line
// is read once it is answered (wait).
func (o *stdioOrder) passOn(line []byte, w io.Writer) bool {
	if !bytes.Contains(line, []byte(`"initialize"`)) && !bytes.Contains(line, []byte(`"server/discover"`)) &&
		!slices.ContainsFunc(beforeStart, func(m string) bool { return bytes.Contains(line, []byte(`"`+m+`"`)) }) {
		return false
	}
	m, err := mcpwire.Read(line)
	if err != nil || !m.HasMethod {
		return false
	}
	id, ok := m.WireID()
	if !ok {
		return false
	}
	if m.Is("initialize") || m.Is("server/discover") {
		o.mu.Lock()
		o.await, o.answered = id, make(chan struct{})
		o.mu.Unlock()
		return false
	}
	if !slices.Contains(beforeStart, m.Method) || o.started.Load() {
		return false
	}
	if p, err := mcpwire.ReadParams(m.Params); len(m.Params) > 0 && (err != nil || !p.Plain()) {
		return false // not of the revisions up to 2025-11-25: the SDK's to answer
	}
	answerError(w, id, 0, fmt.Sprintf("method %q is invalid during session initialization", m.Method))
	return true
}

// wait returns once the request awaited (passOn) is answered, or ctx
// ends.
func (o *stdioOrder) wait(ctx context.Context) {
	o.mu.Lock()
	ch := o.answered
	o.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// wrote takes msg, one message written to the client, with the write's
// error: the answer awaited, or any failed write, ends the wait.
func (o *stdioOrder) wrote(msg []byte, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.await == nil {
		return
	}
	if err == nil {
		m, rerr := mcpwire.Read(msg)
		if rerr != nil || m.HasMethod || !bytes.Equal(m.ID, o.await) {
			return
		}
	}
	close(o.answered)
	o.await, o.answered = nil, nil
}
