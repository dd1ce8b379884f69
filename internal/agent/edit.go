package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/ide/client"
)

// Proposal is an edit the model proposes: the whole new content of one
// file in the workspace.
type Proposal struct {
	// Path is absolute and inside the workspace.
	Path string
	// Rel is Path relative to the workspace, for messages.
	Rel string
	// Old is the current content ("" for a new file); New the proposal.
	Old, New string
	IsNew    bool
}

// Decision is what the person decided about a Proposal.
type Decision struct {
	Accepted bool
	// Content is what to write when Accepted: the proposal, with the
	// person's own edits where the reviewer lets them edit.
	Content string
	// Where says who decided, for the model and the transcript ("the IDE",
	// "the terminal", "--yes").
	Where string
}

// Reviewer shows a Proposal to the person and returns their decision. It
// returns an error when nobody could decide (no connection, cancelled);
// the file is then left alone.
type Reviewer interface {
	Review(ctx context.Context, p Proposal) (Decision, error)
}

// IDEReviewer shows proposals as diffs in the editor of a connected
// companion (openDiff); the person may change the text before accepting.
// Cancelling ctx closes the diff in the editor.
type IDEReviewer struct {
	Client *client.Client
	// Name is the editor's name for messages.
	Name string
	// Waiting is told when a diff waits for the person; may be nil.
	Waiting func(p Proposal)
}

// Review implements Reviewer.
func (r *IDEReviewer) Review(ctx context.Context, p Proposal) (Decision, error) {
	d, err := r.Client.StartDiff(ctx, p.Path, p.New)
	if err != nil {
		return Decision{}, fmt.Errorf("show the diff in %s: %w", r.Name, err)
	}
	if r.Waiting != nil {
		r.Waiting(p)
	}
	out, err := d.Wait(ctx)
	if err != nil {
		return Decision{}, fmt.Errorf("wait for the answer in %s: %w", r.Name, err)
	}
	return Decision{Accepted: out.Accepted, Content: out.Content, Where: r.Name}, nil
}

// YesReviewer accepts every proposal as it is (--yes).
type YesReviewer struct{}

// Review implements Reviewer.
func (YesReviewer) Review(_ context.Context, p Proposal) (Decision, error) {
	return Decision{Accepted: true, Content: p.New, Where: "--yes"}, nil
}

// NoReviewer refuses every proposal: nobody can be asked (gemkit run with
// no companion, no terminal and no --yes). It fails closed.
type NoReviewer struct{}

// Review implements Reviewer.
func (NoReviewer) Review(context.Context, Proposal) (Decision, error) {
	return Decision{}, errors.New("nobody can review the edit here (no IDE companion, no terminal); the person may rerun with --yes to let edits be written")
}

// ErrOutside is a path outside the workspace.
var ErrOutside = errors.New("outside the workspace")

// resolve turns a path the model gave into an absolute path inside the
// workspace, following symbolic links (of the file or of any folder on
// the way) so that a link cannot lead outside it. The file need not exist.
func resolve(workspace, p string) (abs, rel string, err error) {
	if strings.ContainsRune(p, 0) || strings.TrimSpace(p) == "" {
		return "", "", fmt.Errorf("%q is not a path", p)
	}
	root, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", "", err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	// Resolve the longest existing prefix, keep the rest as written.
	real, rest := p, ""
	for {
		r, err := filepath.EvalSymlinks(real)
		if err == nil {
			real = filepath.Join(r, rest)
			break
		}
		parent := filepath.Dir(real)
		if parent == real {
			return "", "", err
		}
		rest = filepath.Join(filepath.Base(real), rest)
		real = parent
	}
	rel, err = filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", fmt.Errorf("%s is %w (%s); only files under it can be read or edited", p, ErrOutside, root)
	}
	return real, filepath.ToSlash(rel), nil
}
