package companion

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// Position is a place in a file, 1-based like the editor protocol's
// cursor.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a span of a file.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Diagnostic is one problem the editor shows in a file.
type Diagnostic struct {
	Message string `json:"message"`
	// Severity is "error", "warning", "info" or "hint".
	Severity string `json:"severity"`
	Source   string `json:"source,omitempty"`
	Code     string `json:"code,omitempty"`
	Range    Range  `json:"range"`
}

// FileDiagnostics are the diagnostics of one file.
type FileDiagnostics struct {
	Path        string       `json:"path"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// DiagnosticsEditor is an Editor that can report its diagnostics (Claude
// Code asks for them around each edit). An Editor without it reports none.
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

// Diagnostics asks the editor for the diagnostics of path (all files when
// empty); for an editor that does not report diagnostics, Config's
// Diagnostics answers, else there are none.
func (s *Server) Diagnostics(ctx context.Context, path string) ([]FileDiagnostics, error) {
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
	out := files[:0:0]
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
	return out, nil
}
