package mcpserver

import (
	"context"
	"fmt"
	"strings"
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
// goes on. The stdio fast paths (fastlist.go, fastcall.go) answer only
// once the session's initialize was answered (stdioOrder).

// handshake is the outermost receiving middleware: it refuses what
// comes out of the session's order (outOfOrder), and gives the answer
// to initialize or server/discover (Claude Code 2.1.330 connects with
// it) the instructions, as the summary is when the client connects
// rather than when the server started.
func (s *Server) handshake(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if err := outOfOrder(method, req); err != nil {
			return nil, err
		}
		res, err := next(ctx, method, req)
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
			if o, ok := ctx.Value(stdioOrderKey{}).(*stdioOrder); ok {
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
// session's order where the SDK would take it, or nil.
func outOfOrder(method string, req mcp.Request) error {
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
	case p != nil && method == "server/discover" && !mcpwire.IsStateless(p.ProtocolVersion):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"server/discover is of revisions from %s on, and this session began with initialize (revision %s): a session keeps the revision it began with; start a new session to discover",
			mcpwire.Stateless, p.ProtocolVersion)}
	}
	return nil
}

// stdioOrder is what a stdio session's reader (listingReader) learns of
// its session's order from the SDK's handling, carried in the context
// the session's requests are handled under.
type stdioOrder struct {
	// initialized: the session's initialize was answered with a result.
	initialized atomic.Bool
}

type stdioOrderKey struct{}
