package companion

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// The diagnostics are gemkit's one diagnostic type (ide.Diagnostic): in
// LSP's terms in memory, the editor protocol's form as JSON.
type (
	Diagnostic      = ide.Diagnostic
	FileDiagnostics = ide.FileDiagnostics
)

// DiagnosticsEditor is an [Editor] that can report its diagnostics (Claude
// Code asks for them around each edit). An [Editor] without it reports none.
type DiagnosticsEditor interface {
	// Diagnostics returns the diagnostics of path, or of every file the
	// editor knows when path is empty.
	Diagnostics(ctx context.Context, path string) ([]FileDiagnostics, error)
}

// Mentions is what an editor calls to @-mention a file (and lines, 1-based;
// 0 when none) in the agents that take mentions (Claude Code).
type Mentions interface {
	Mention(path string, lineStart, lineEnd int)
}

var _ Mentions = (*Server)(nil)

// claudeSettle bounds the wait for diagnostics that are current when an
// agent asks the editor's language clients.
const claudeSettle = 3 * time.Second

// answerMargin is kept, of the time left to answer diagnostics, for the
// answer's way back: the editor's language clients settle for the rest.
const answerMargin = 150 * time.Millisecond

// Diagnostics asks the editor for the diagnostics of path (all files when
// empty); for an editor that does not report diagnostics, Config's
// Diagnostics answers, else there are none.
//
// An editor that lends its language clients (LanguageEditor) answers as
// it answers gemkit's code-intelligence tools, so that Claude Code and
// `gemkit mcp` see the same problems: its clients' diagnostics once they
// have looked at the buffers' current text when it has a client for the
// file (or any client, for all files), else what it shows merged with
// Config's Diagnostics (gemkit's own servers). A plugin that lends none
// answers with what it shows.
//
// The answer comes by ctx's deadline: an agent that stops waiting
// (Claude Code) gains nothing from a later one. gemkit's own servers may
// have to start first (a broker, a language server in the sandbox,
// seconds on a loaded machine); they are asked apart from the call, so
// that a late answer of theirs finds them started for the next one, and
// this one holds only the files whose answer is complete without them
// (withoutOwn).
func (s *Server) Diagnostics(ctx context.Context, path string) ([]FileDiagnostics, error) {
	if files, ok, err := s.clientDiagnostics(ctx, path); ok {
		return files, err
	}
	de, ok := s.editor.(DiagnosticsEditor)
	if !ok {
		if s.cfg.Diagnostics == nil {
			return []FileDiagnostics{}, nil
		}
		own, ok := s.ownDiagnostics(ctx, path)()
		if !ok {
			return s.withoutOwn(nil, path)
		}
		return s.keepDiagnostics(own, path), nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.EditorTimeout)
	defer cancel()
	files, err := de.Diagnostics(ctx, path)
	if err != nil {
		return nil, late(ide.MethodDiagnostics, start, err)
	}
	return s.keepDiagnostics(files, path), nil
}

// late words err, an editor's failure to answer method, when it is that
// the time to answer (from start) ran out: the bound is EditorTimeout or
// the asker's, whichever is shorter.
func late(method string, start time.Time, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the editor did not answer %s within %v", method, time.Since(start).Round(10*time.Millisecond))}
	}
	return err
}

// keepDiagnostics keeps the files an editor reported that the agents may
// be told of: absolute paths, only path's when path is not empty.
func (s *Server) keepDiagnostics(files []FileDiagnostics, path string) []FileDiagnostics {
	out := []FileDiagnostics{}
	for _, f := range files {
		if !filepath.IsAbs(f.Path) {
			continue // only files on disk are named to the agents
		}
		if path != "" && filepath.Clean(f.Path) != filepath.Clean(path) {
			continue
		}
		if f.Diagnostics == nil {
			f.Diagnostics = []Diagnostic{}
		}
		out = append(out, f)
	}
	return out
}

// ownDiagnostics asks Config's Diagnostics (gemkit's own servers) for
// path's diagnostics, bounded by EditorTimeout but not by ctx, and
// returns what waits for them until ctx ends: their answer (none when
// they failed, which is logged), and ok false when it came too late.
// For every file, before they have ever answered for every file (they
// start then: a broker, each language's server), it does not wait
// beyond what they answered already: the answer would come at ctx's
// end, near the agent's, for nothing.
func (s *Server) ownDiagnostics(ctx context.Context, path string) (wait func() (files []FileDiagnostics, ok bool)) {
	type answer struct {
		files []FileDiagnostics
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.EditorTimeout)
		defer cancel()
		files, err := s.cfg.Diagnostics.Diagnostics(octx, path)
		if err == nil && path == "" {
			s.ownAll.Store(true)
		}
		done <- answer{files, err}
	}()
	got := func(a answer) ([]FileDiagnostics, bool) {
		if a.err != nil {
			s.log.Debug("gemkit's own servers' diagnostics", "path", path, "err", a.err)
		}
		return a.files, true
	}
	return func() ([]FileDiagnostics, bool) {
		if path == "" && !s.ownAll.Load() {
			select {
			case a := <-done:
				return got(a)
			default:
				s.log.Debug("gemkit's own servers are starting; answered without them", "path", path)
				return nil, false
			}
		}
		select {
		case a := <-done:
			return got(a)
		case <-ctx.Done():
			s.log.Debug("gemkit's own servers' diagnostics came too late for this answer", "path", path)
			return nil, false
		}
	}
}

// servesDiagnostics is a Config.Diagnostics that can tell, without
// starting anything, whether it would answer for a file
// (workspaceintel.Diagnostics).
type servesDiagnostics interface {
	Serves(path string) bool
}

// withoutOwn is the answer for path ("" for all files) when gemkit's
// own servers answered too late, from what the editor shows: only files
// they would not answer for, as theirs would be incomplete. An agent
// that compares answers (Claude Code takes a file's before an edit and
// reports what is new after it) would otherwise take the problems they
// find, once in time, for new ones. A file they serve asked alone is an
// error.
func (s *Server) withoutOwn(shown []FileDiagnostics, path string) ([]FileDiagnostics, error) {
	serves := func(p string) bool {
		if c, ok := s.cfg.Diagnostics.(servesDiagnostics); ok {
			return c.Serves(p)
		}
		return true
	}
	if path != "" {
		if serves(path) {
			return nil, fmt.Errorf("gemkit's own language servers did not answer in time for %s (they may be starting); its diagnostics would be incomplete", path)
		}
		return s.keepDiagnostics(shown, path), nil
	}
	var out []FileDiagnostics
	for _, f := range shown {
		if filepath.IsAbs(f.Path) && !serves(f.Path) {
			out = append(out, f)
		}
	}
	return s.keepDiagnostics(out, path), nil
}

// clientDiagnostics answers Diagnostics from the editor's language
// clients, or, when the editor has no client for path, from what it shows
// with Config's Diagnostics; ok is false when the editor lends no
// clients and reports no diagnostics of its own.
func (s *Server) clientDiagnostics(ctx context.Context, path string) (files []FileDiagnostics, ok bool, err error) {
	le, isLE := s.editor.(LanguageEditor)
	if !isLE || s.cfg.Diagnostics == nil {
		return nil, false, nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.EditorTimeout)
	defer cancel()
	// What the editor shows is asked with its clients, not after them:
	// one round trip to a busy editor rather than two, where an agent's
	// budget is half a second (Claude Code's, for a file). When the file
	// has a client, that answer goes unused: a read of what the editor
	// holds, cheaper than the wait it saves otherwise.
	type answer struct {
		files []FileDiagnostics
		err   error
	}
	var shownc chan answer
	if de, ok := s.editor.(DiagnosticsEditor); ok {
		shownc = make(chan answer, 1)
		go func() {
			files, err := de.Diagnostics(ctx, path)
			shownc <- answer{files, err}
		}()
	}
	clients, err := le.LSPClients(ctx, path)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
		if shownc == nil {
			return nil, false, nil
		}
		// An editor that lends no clients answers with what it shows,
		// asked already.
		a := <-shownc
		if a.err != nil {
			return nil, true, late(ide.MethodDiagnostics, start, a.err)
		}
		return s.keepDiagnostics(a.files, path), true, nil
	}
	if err != nil {
		return nil, true, late(ide.MethodLSPClients, start, err)
	}
	if len(clients) == 0 {
		// What the editor shows (its linters, the quickfix list) and
		// what gemkit's own servers find, as code_diagnostics would;
		// these are asked before the editor's answer is read, so that
		// they start while it comes.
		own := s.ownDiagnostics(ctx, path)
		var shown []FileDiagnostics
		if shownc != nil {
			a := <-shownc
			if a.err != nil {
				return nil, true, late(ide.MethodDiagnostics, start, a.err)
			}
			shown = a.files
		}
		ownFiles, ok := own()
		if !ok {
			files, err := s.withoutOwn(shown, path)
			return files, true, err
		}
		return s.keepDiagnostics(mergeDiagnostics(shown, ownFiles), path), true, nil
	}
	settle := min(claudeSettle, s.cfg.EditorTimeout/2)
	if deadline, ok := ctx.Deadline(); ok {
		settle = max(min(settle, time.Until(deadline)-answerMargin), 0)
	}
	files, err = le.SettledDiagnostics(ctx, path, settle)
	if err != nil {
		return nil, true, late(ide.MethodDiagnostics, start, err)
	}
	return s.keepDiagnostics(files, path), true, nil
}

// mergeDiagnostics joins two answers by file, each diagnostic once.
func mergeDiagnostics(a, b []FileDiagnostics) []FileDiagnostics {
	out := append([]FileDiagnostics(nil), a...)
	index := map[string]int{}
	for i, f := range out {
		index[filepath.Clean(f.Path)] = i
	}
	for _, f := range b {
		i, ok := index[filepath.Clean(f.Path)]
		if !ok {
			index[filepath.Clean(f.Path)] = len(out)
			out = append(out, f)
			continue
		}
		have := out[i].Diagnostics
		for _, d := range f.Diagnostics {
			dup := false
			for _, h := range have {
				dup = dup || h == d
			}
			if !dup {
				have = append(have, d)
			}
		}
		out[i].Diagnostics = have
	}
	return out
}
