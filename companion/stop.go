package companion

import (
	"context"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide/discovery"
)

// shutdownGrace bounds how long a stop waits for the clients' streams to
// take what was sent them and for requests in flight to end.
const shutdownGrace = 2 * time.Second

// shutdown removes the discovery file first, so that no new client finds
// a server that is going away, then ends every stream and the listener.
func (s *Server) shutdown() {
	s.wsMu.Lock()
	s.stopped = true
	if s.written {
		if err := discovery.Remove(s.discoveryPath); err != nil {
			s.log.Warn("removing discovery file", "err", err)
		}
	}
	if s.qwenWritten {
		if err := discovery.Remove(s.qwenLockPath); err != nil {
			s.log.Warn("removing Qwen Code lock file", "err", err)
		}
	}
	s.wsMu.Unlock()
	// Nobody can answer a diff once the companion has stopped, and a
	// Gemini CLI whose diff is never answered keeps its "Apply this
	// change?" box on screen, deaf to its own keys (gemini-cli#11239):
	// what waits is rejected, as the terminal front-end does on Ctrl-C.
	// Claude Code's question stays answerable in its own terminal.
	for _, p := range s.diffs.geminiWaiting() {
		s.DiffRejected(p)
	}
	s.state.stop()
	// What the clients were sent just before (the outcomes of the diffs
	// rejected on Ctrl-C) is written before their streams end; a client
	// that reads nothing holds the stop up for shutdownGrace at most.
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.sess.closeAll(ctx) })
	wg.Go(func() { s.closeStreams(ctx) })
	if s.claude != nil {
		wg.Go(func() { s.claude.shutdown(ctx) })
	}
	wg.Wait()
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
}
