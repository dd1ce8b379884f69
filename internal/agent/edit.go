package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemkit/gemkit/client"
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
	// Protected, when set, says why the file is protected: another
	// program runs or obeys it outside any sandbox. Only a reviewer that
	// ReviewsProtected is given such a proposal, and it must have the
	// person allow that very file, showing these words.
	Protected string
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
	// ReviewsProtected reports whether the reviewer has the person allow
	// a protected file explicitly: given a Proposal whose Protected is
	// set, it shows why the file is special and accepts only on an
	// answer about that very file. The terminal (a typed confirmation),
	// the IDE with a terminal to confirm on first, and an ACP client (a
	// permission request of its own) do; --yes does not, and is given no
	// such proposal.
	ReviewsProtected() bool
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
	// ConfirmProtected asks the person, before the diff is shown, to
	// allow the protected file p.Path, saying why it is (p.Protected);
	// nil when nobody can be asked that way, and the IDE then reviews no
	// protected file.
	ConfirmProtected func(ctx context.Context, p Proposal) (bool, error)
}

// ReviewsProtected implements Reviewer: when a terminal confirms first.
func (r *IDEReviewer) ReviewsProtected() bool { return r.ConfirmProtected != nil }

// Review implements Reviewer. A protected file is first confirmed
// through ConfirmProtected: the IDE's accept is one click that shows no
// reason.
func (r *IDEReviewer) Review(ctx context.Context, p Proposal) (Decision, error) {
	if p.Protected != "" {
		if r.ConfirmProtected == nil {
			return Decision{}, errors.New("a protected file needs a confirmation the IDE does not ask for")
		}
		ok, err := r.ConfirmProtected(ctx, p)
		if err != nil {
			return Decision{}, err
		}
		if !ok {
			return Decision{Accepted: false, Where: "the terminal"}, nil
		}
	}
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

// YesReviewer accepts every proposal as it is (--yes). It asks about no
// protected file: one reaches it only when the person named it
// (Agent.AllowProtected).
type YesReviewer struct{}

// ReviewsProtected implements Reviewer: never.
func (YesReviewer) ReviewsProtected() bool { return false }

// Review implements Reviewer.
func (YesReviewer) Review(_ context.Context, p Proposal) (Decision, error) {
	return Decision{Accepted: true, Content: p.New, Where: "--yes"}, nil
}

// NoReviewer refuses every proposal: nobody can be asked (gemkit run with
// no companion, no terminal and no --yes). It fails closed.
type NoReviewer struct {
	// Instead says what the person may do instead to let edits be
	// written ("rerun with --yes"), for the refusal; "" says nothing.
	Instead string
}

// ReviewsProtected implements Reviewer: nobody is asked.
func (NoReviewer) ReviewsProtected() bool { return false }

// Review implements Reviewer.
func (r NoReviewer) Review(context.Context, Proposal) (Decision, error) {
	msg := "nobody can review the edit here (no IDE companion, no terminal)"
	if r.Instead != "" {
		msg += "; the person may " + r.Instead + " to let edits be written"
	}
	return Decision{}, errors.New(msg)
}
