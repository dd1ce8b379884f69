package codeintel

import (
	"context"
	"errors"
)

// EditorFinder returns the Source of the editor that serves the workspace
// through a gemkit companion, when one runs now and can answer; nil when
// none does. It is asked before each question (an editor may start or
// quit while an agent works), so it should be cheap: a cached connection.
type EditorFinder func(ctx context.Context) Source

// Choose is the one place where the Source of an answer is chosen: the
// editor's, when a companion for the workspace can answer (its language
// clients are warm, and know the unsaved buffers), else own, gemkit's own
// language servers. The editor is passed over for a question when it has
// no server for the file (a *NoServerError) or its server does not offer
// what is asked (ErrUnsupported). editor may be nil (no editor source);
// so may own (then only the editor answers).
func Choose(editor EditorFinder, own Source) Source {
	return &chooser{editor: editor, own: own}
}

type chooser struct {
	editor EditorFinder
	own    Source
}

// ask runs f on the editor's Source, then, when it could not answer, on
// the own one.
func ask[T any](ctx context.Context, c *chooser, f func(Source) (T, error)) (T, error) {
	var firstErr error
	if c.editor != nil {
		if ed := c.editor(ctx); ed != nil {
			res, err := f(ed)
			if err == nil || !(IsNoServer(err) || errors.Is(err, ErrUnsupported)) {
				return res, err
			}
			firstErr = err
		}
	}
	if c.own == nil {
		var zero T
		if firstErr != nil {
			return zero, firstErr
		}
		return zero, &NoServerError{Reason: "no language server can answer: no editor serves this workspace and gemkit's own servers are off"}
	}
	return f(c.own)
}

func (c *chooser) Status(ctx context.Context, path string) (Status, error) {
	return ask(ctx, c, func(s Source) (Status, error) { return s.Status(ctx, path) })
}

func (c *chooser) Definition(ctx context.Context, at DocPos) ([]Location, error) {
	return ask(ctx, c, func(s Source) ([]Location, error) { return s.Definition(ctx, at) })
}

func (c *chooser) Implementations(ctx context.Context, at DocPos) ([]Location, error) {
	return ask(ctx, c, func(s Source) ([]Location, error) { return s.Implementations(ctx, at) })
}

func (c *chooser) References(ctx context.Context, at DocPos) ([]Location, error) {
	return ask(ctx, c, func(s Source) ([]Location, error) { return s.References(ctx, at) })
}

func (c *chooser) Hover(ctx context.Context, at DocPos) (Hover, error) {
	return ask(ctx, c, func(s Source) (Hover, error) { return s.Hover(ctx, at) })
}

func (c *chooser) DocumentSymbols(ctx context.Context, path string) ([]Symbol, error) {
	return ask(ctx, c, func(s Source) ([]Symbol, error) { return s.DocumentSymbols(ctx, path) })
}

func (c *chooser) WorkspaceSymbols(ctx context.Context, query string) ([]Symbol, error) {
	return ask(ctx, c, func(s Source) ([]Symbol, error) { return s.WorkspaceSymbols(ctx, query) })
}

func (c *chooser) IncomingCalls(ctx context.Context, at DocPos) ([]Call, error) {
	return ask(ctx, c, func(s Source) ([]Call, error) { return s.IncomingCalls(ctx, at) })
}

func (c *chooser) OutgoingCalls(ctx context.Context, at DocPos) ([]Call, error) {
	return ask(ctx, c, func(s Source) ([]Call, error) { return s.OutgoingCalls(ctx, at) })
}

func (c *chooser) Diagnostics(ctx context.Context, paths []string) ([]FileDiagnostics, error) {
	return ask(ctx, c, func(s Source) ([]FileDiagnostics, error) { return s.Diagnostics(ctx, paths) })
}

// Changed tells every Source: the one that answers next must not see
// the file as it was.
func (c *chooser) Changed(ctx context.Context, changes []Change) error {
	var errs []error
	if c.editor != nil {
		if ed := c.editor(ctx); ed != nil {
			if err := ed.Changed(ctx, changes); err != nil && !IsNoServer(err) {
				errs = append(errs, err)
			}
		}
	}
	if c.own != nil {
		if err := c.own.Changed(ctx, changes); err != nil && !IsNoServer(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Confined is a Source whose language servers run in gemkit's sandbox,
// in a profile that opens only what an answer may quote (the workspace
// and the servers' read-only folders) and never a closed path: what such
// a server says was read from those files alone. gemkit's own servers
// (langserver.Pool, and the broker's client) are; an editor's language
// clients, which run with the editor's rights, are not.
type Confined interface {
	Confined() bool
}

// confined reports whether src's answer to the question asked now comes
// from confined servers: a chooser's does when no editor serves the
// workspace and its own Source is confined.
func confined(ctx context.Context, src Source) bool {
	if c, ok := src.(*chooser); ok {
		if c.editor != nil && c.editor(ctx) != nil {
			return false
		}
		src = c.own
	}
	s, ok := src.(Confined)
	return ok && s.Confined()
}
