package companion

import "github.com/gemkit/gemkit/ide/discovery"

// cleanUp removes, once this companion's own files are written, the files
// that would lead a CLI to a server that is gone: the discovery files of
// editors that ended, and the discovery files and Claude Code lock files
// of this editor's earlier companions whose port refuses connections (one
// killed with SIGKILL while its editor runs); with Qwen Code's lock file,
// the Qwen Code lock files the CLI itself would find stale. Failures are
// logged: a file left behind costs a CLI a choice, not this companion its
// start.
func (s *Server) cleanUp() {
	if removed, err := discovery.CleanStale(s.cfg.DiscoveryDir); err != nil {
		s.log.Warn("cleaning stale discovery files", "err", err)
	} else if len(removed) > 0 {
		s.log.Debug("removed stale discovery files", "files", removed)
	}
	if removed, err := discovery.CleanUnserved(s.cfg.DiscoveryDir, s.cfg.PID, s.port); err != nil {
		s.log.Warn("cleaning discovery files of this editor's earlier companions", "err", err)
	} else if len(removed) > 0 {
		s.log.Debug("removed discovery files of this editor's earlier companions", "files", removed)
	}
	if s.cfg.Qwen {
		if removed, err := discovery.CleanStaleQwen(s.cfg.QwenLockDir); err != nil {
			s.log.Warn("cleaning stale Qwen Code lock files", "err", err)
		} else if len(removed) > 0 {
			s.log.Debug("removed stale Qwen Code lock files", "files", removed)
		}
	}
	if s.claude != nil {
		if removed, err := discovery.CleanUnservedClaude(s.claude.lockDir, s.cfg.PID, s.claude.port); err != nil {
			s.log.Warn("cleaning Claude Code lock files of this editor's earlier companions", "err", err)
		} else if len(removed) > 0 {
			s.log.Debug("removed Claude Code lock files of this editor's earlier companions", "files", removed)
		}
	}
}
