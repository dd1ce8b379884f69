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

// Diagnostics asks the editor for the diagnostics of path (all files when
// empty); for an editor that does not report diagnostics, Config's
// Diagnostics answers, else there are none.
//
// An editor that lends its language clients (LanguageEditor) answers as
// it answers gemkit's code-intelligence tools, so that Claude Code and
// `gemkit mcp` see the same problems: its clients' diagnostics once they
// have looked at the buffers' current text when it has a client for the
// file (or any client, for all files), else Config's Diagnostics (gemkit's
// own servers). A plugin that lends none answers with what it shows.
func (s *Server) Diagnostics(ctx context.Context, path string) ([]FileDiagnostics, error) {
	if files, ok, err := s.clientDiagnostics(ctx, path); ok {
		return files, err
	}
	de, ok := s.editor.(DiagnosticsEditor)
	if !ok {
		de = s.cfg.Diagnostics
	}
	if de == nil {
		return []FileDiagnostics{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.EditorTimeout)
	defer cancel()
	files, err := de.Diagnostics(ctx, path)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the editor did not report diagnostics within %v", s.cfg.EditorTimeout)
		}
		return nil, err
	}
	return s.keepDiagnostics(files, path), nil
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

// clientDiagnostics answers Diagnostics from the editor's language
// clients, or, when the editor has no client for path, from what it shows
// with Config's Diagnostics; ok is false when the editor lends no
// clients.
func (s *Server) clientDiagnostics(ctx context.Context, path string) (files []FileDiagnostics, ok bool, err error) {
	le, isLE := s.editor.(LanguageEditor)
	if !isLE || s.cfg.Diagnostics == nil {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.EditorTimeout)
	defer cancel()
	clients, err := le.LSPClients(ctx, path)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, s.editorErr(ide.MethodLSPClients, err)
	}
	if len(clients) == 0 {
		// What the editor shows (its linters, the quickfix list) and
		// what gemkit's own servers find, as code_diagnostics would.
		var shown []FileDiagnostics
		if de, ok := s.editor.(DiagnosticsEditor); ok {
			if shown, err = de.Diagnostics(ctx, path); err != nil {
				return nil, true, s.editorErr(ide.MethodDiagnostics, err)
			}
		}
		own, err := s.cfg.Diagnostics.Diagnostics(ctx, path)
		if err != nil {
			s.log.Debug("gemkit's own servers' diagnostics", "path", path, "err", err)
		}
		return s.keepDiagnostics(mergeDiagnostics(shown, own), path), true, nil
	}
	files, err = le.SettledDiagnostics(ctx, path, min(claudeSettle, s.cfg.EditorTimeout/2))
	if err != nil {
		return nil, true, s.editorErr(ide.MethodDiagnostics, err)
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
