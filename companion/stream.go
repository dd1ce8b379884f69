package companion

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/gemkit/gemkit/ide"
)

// StreamPath is the WebSocket transport of the Gemini-side MCP endpoint:
// the same tools and notifications as /mcp, behind the same guard and
// bearer token, one JSON-RPC message per WebSocket text message.
const StreamPath = "/stream"

// streamPeers are the Gemini-side clients connected over /stream.
type streamPeers struct {
	mu    sync.Mutex
	peers map[*wsPeer]bool // true once initialized
}

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	p, err := acceptWS(w, r, "mcp", s.log)
	if err != nil {
		s.log.Debug("/stream: websocket upgrade refused", "err", err)
		return
	}
	s.streams.mu.Lock()
	if s.streams.peers == nil {
		s.streams.peers = map[*wsPeer]bool{}
	}
	s.streams.peers[p] = false
	s.streams.mu.Unlock()
	s.findPeer(&p.info, p.conn)
	if hook := s.testBeforeEventWrite.Load(); hook != nil {
		p.beforeWrite = *hook
	}
	p.lost = func(label string) {
		s.log.Warn("a /stream client's connection closed before it received " + label + ": it will not get it; ask its agent to propose the change again")
	}
	defer func() {
		s.streams.mu.Lock()
		wasReady := s.streams.peers[p]
		delete(s.streams.peers, p)
		s.streams.mu.Unlock()
		if wasReady {
			s.clientsChanged()
		}
	}()
	serveMCPPeer(context.Background(), s, p, s.mcp.rpc, nil, func(method string, _ json.RawMessage) {
		if method != "notifications/initialized" {
			return
		}
		s.streams.mu.Lock()
		s.streams.peers[p] = true
		s.streams.mu.Unlock()
		s.clientsChanged()
		// As on /mcp's first event stream: the current context first.
		if msg := s.currentContextMsg(); msg != nil {
			p.send(msg)
		}
	})
}

// sendStreams sends msg to every initialized /stream client; label, when
// not "", names what it carries for a person (an outcome), told if a
// client goes without it.
func (s *Server) sendStreams(msg []byte, label string) {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	for p, ready := range s.streams.peers {
		if ready {
			p.sendLabelled(msg, label)
		}
	}
}

// closeStreams ends every /stream connection at shutdown (hijacked
// connections are not closed by http.Server.Shutdown), each once what it
// was sent is written, within ctx.
func (s *Server) closeStreams(ctx context.Context) {
	s.streams.mu.Lock()
	peers := slices.Collect(maps.Keys(s.streams.peers))
	s.streams.mu.Unlock()
	closeAllFlushed(ctx, peers)
}

// notifyGemini sends a notification to every Gemini-side client: the
// sessions of /mcp and the clients of /stream. label names what it
// carries for a person ("" for nothing a person must hear of).
func (s *Server) notifyGemini(method string, params any, label string) {
	s.broadcast(method, params)
	msg, err := notification(method, params)
	if err != nil {
		return
	}
	s.sendStreams(msg, label)
}

// rejectReplaced tells the /mcp session whose diff of path another
// agent's diff replaced that its proposal was rejected: it has left the
// editor. It goes to that session alone, since the agent whose diff
// replaced it waits on the same path and would take the rejection for
// its own.
func (s *Server) rejectReplaced(session, path string) {
	sess := s.sess.get(session)
	if sess == nil {
		return
	}
	msg, err := notification(ide.MethodDiffRejected, ide.DiffRejected{FilePath: path})
	if err != nil {
		s.log.Error("encoding notification", "method", ide.MethodDiffRejected, "err", err)
		return
	}
	s.enqueueOrClose(sess, msg)
}

// contextChanged runs after the debounce: the Gemini-side clients get the
// new context, Claude Code the new selection.
func (s *Server) contextChanged() {
	s.broadcastContext()
	if msg := s.currentContextMsg(); msg != nil {
		s.sendStreams(msg, "")
	}
	if s.claude != nil {
		s.claude.contextChanged()
	}
}
