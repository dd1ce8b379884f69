package companion

import (
	"context"

	"github.com/gemkit/gemkit/ide"
)

// Editor is what the companion asks of the editor it serves. The stdio
// editor protocol ([github.com/gemkit/gemkit/companion/editorproto.Conn]), the
// language server ([github.com/gemkit/gemkit/companion/lspserver.Server]), the
// terminal front-end and tests each implement it; the companion itself
// knows no editor.
type Editor interface {
	// OpenDiff shows a diff of filePath (left: the file on disk, or empty
	// when it does not exist) against newContent (right, editable). It
	// returns once the diff is shown; the outcome comes later through
	// [Events.DiffAccepted] or [Events.DiffRejected]. [ProposedBy] of
	// ctx names the agent that proposed the change, for the editor to
	// show: the way to answer may depend on it.
	OpenDiff(ctx context.Context, filePath, newContent string) error
	// CloseDiff closes the diff of filePath without accepting or
	// rejecting it and returns the right side's current text. ok is false
	// when no diff of that file was open.
	CloseDiff(ctx context.Context, filePath string) (content string, ok bool, err error)
	// FileWritten tells the editor that the companion wrote path on disk
	// (through POST /write-file), so that it reloads the file.
	FileWritten(ctx context.Context, path string) error
}

// proposerKey is the context key of the agent an openDiff came from.
type proposerKey struct{}

// WithProposer returns a copy of ctx that names agent (a [Client.Agent]:
// [AgentGemini], [AgentClaude], [AgentQwen], …) as the one proposing the
// diff an [Editor.OpenDiff] with it shows. The companion sets it on every
// OpenDiff; tests and other callers of an Editor may too.
func WithProposer(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, proposerKey{}, agent)
}

// ProposedBy is the agent ctx names as proposing a diff ([WithProposer]):
// "" when the client that asked was not recognised. It is request-scoped
// data, which is why it rides on the context rather than widening the
// [Editor] interface that plugins and front-ends implement.
func ProposedBy(ctx context.Context) string {
	a, _ := ctx.Value(proposerKey{}).(string)
	return a
}

// Events is how an editor reports to the companion. The companion's [Server]
// implements it; every method is safe to call from any goroutine and never
// blocks on the network.
type Events interface {
	// Focus makes path the active file, with an optional cursor and
	// selection.
	Focus(path string, cursor *ide.Cursor, selectedText string)
	// Selection moves the cursor or selection within path, which becomes
	// the active file if it was not.
	Selection(path string, cursor ide.Cursor, selectedText string)
	// Close removes path from the open files.
	Close(path string)
	// Rename moves an open file to a new path.
	Rename(oldPath, newPath string)
	// Delete removes path from the open files because it left the disk.
	Delete(path string)
	// UpdateWorkspace replaces the workspace folders (when paths is not
	// nil) and the trust (when trusted is not nil), and rewrites the
	// discovery file.
	UpdateWorkspace(paths []string, trusted *bool) error
	// DiffAccepted resolves the open diff of filePath with its final
	// content, which may carry the person's own edits.
	DiffAccepted(filePath, content string)
	// DiffRejected resolves the open diff of filePath as rejected.
	DiffRejected(filePath string)
}

// DiffShower is implemented by an [Editor] that can be unable to show diffs
// at all: a language client without workspace/applyEdit (Vim's ALE). While
// ShowsDiffs is false the MCP endpoint lists no openDiff or closeDiff, so
// Gemini CLI takes diffing as off (it needs both listed: isDiffingEnabled
// in gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts), asks in its
// own terminal and writes the file itself. Listed but refused, the tools
// made the CLI wait for the editor's answer after the person allowed the
// change there, and the write failed. An Editor without the method shows
// diffs.
type DiffShower interface {
	ShowsDiffs() bool
}

// showsDiffs tells whether e can show diffs (DiffShower).
func showsDiffs(e Editor) bool {
	d, ok := e.(DiffShower)
	return !ok || d.ShowsDiffs()
}
