package agent

import (
	"context"
	"encoding/json"

	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// Host is what the agent asks of whoever runs it, shaped like the client
// side of the Agent Client Protocol: read a text file as the person sees
// it (fs/read_text_file), have an edit reviewed (session/request_permission
// with a diff) and write it (fs/write_text_file), and ask before an
// extension tool runs without recorded consent (session/request_permission).
// The terminal, with the IDE through its companion (LocalHost), and an ACP
// client (package acp) are its implementations.
type Host interface {
	Reviewer
	// ReadTextFile returns the text of the file at the absolute path abs as
	// the host sees it (an editor's unsaved buffer). handled is false when
	// the host has no view of its own and the agent reads the disk. A file
	// that does not exist is an error wrapping fs.ErrNotExist.
	ReadTextFile(ctx context.Context, abs string) (text string, handled bool, err error)
	// WriteTextFile writes an accepted edit. handled is false when the
	// agent is to write the disk itself (atomically).
	WriteTextFile(ctx context.Context, abs, content string) (handled bool, err error)
	// AllowTool asks the person whether an extension may run a tool with
	// the permissions q describes; it is the Runner's toolrun.Asker.
	AllowTool(ctx context.Context, q toolrun.ConsentRequest) (bool, error)
}

// LocalHost is the host of `gemkit run` and `gemkit chat`: files on disk,
// edits reviewed by Reviewer (the IDE's diff, the terminal, --yes), tools
// allowed by Ask (the terminal's question; nil when nobody can be asked).
type LocalHost struct {
	Reviewer
	Ask toolrun.Asker
}

// AllowTool implements Host. With nobody to ask, the run is refused as
// the Runner refuses it: consent must be given beforehand.
func (h LocalHost) AllowTool(ctx context.Context, q toolrun.ConsentRequest) (bool, error) {
	if h.Ask == nil {
		return false, &toolrun.ConsentError{Extension: q.Extension, Notice: q.Notice, Lines: q.Lines}
	}
	return h.Ask(ctx, q)
}

// ReviewsProtected implements ProtectedReviewer: whether its Reviewer
// asks about a protected file in words.
func (h LocalHost) ReviewsProtected() bool {
	pr, ok := h.Reviewer.(ProtectedReviewer)
	return ok && pr.ReviewsProtected()
}

// ReadTextFile implements Host: the agent reads the disk.
func (LocalHost) ReadTextFile(context.Context, string) (string, bool, error) { return "", false, nil }

// WriteTextFile implements Host: the agent writes the disk.
func (LocalHost) WriteTextFile(context.Context, string, string) (bool, error) { return false, nil }

// ToolSource is a set of tools beside the built-in and extension ones,
// such as the MCP servers an ACP client passes. Its names must not collide
// with other tools; a declaration whose name is already taken is left out.
type ToolSource interface {
	Decls() []model.ToolDecl
	// Call runs the tool name; a failure the model should read is
	// returned as text with isError, a failure to reach the tool as err.
	Call(ctx context.Context, name string, args json.RawMessage) (text string, isError bool, err error)
}

// ShortNames is a ToolSource whose tools a model may also call by a
// shorter name than the declared one: an MCP tool by its own name,
// without the mcp_<server>_ prefix.
type ShortNames interface {
	// ShortName returns the declared names that short stands for.
	ShortName(short string) []string
}
