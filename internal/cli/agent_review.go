package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/term"
)

// terminalReviewer shows a proposed edit as a coloured diff and asks for
// one key, as the terminal front-end of ide serve does: a accepts, r
// rejects, e edits the proposal in $VISUAL/$EDITOR first.
type terminalReviewer struct {
	s      Streams
	getenv func(string) string
	lines  *term.Lines
}

// ReviewsProtected implements agent.Reviewer: a protected file
// is written only once the person types its name.
func (r *terminalReviewer) ReviewsProtected() bool { return true }

func (r *terminalReviewer) Review(ctx context.Context, p agent.Proposal) (agent.Decision, error) {
	content, edited := p.New, false
	for {
		newLabel := "b/" + p.Rel
		if edited {
			newLabel += " (edited)"
		}
		// The proposal is the model's text: escaped before the colours.
		diff := extension.PrintableText(term.UnifiedDiff("a/"+p.Rel, newLabel, p.Old, content))
		if term.ColorEnabled(r.s.Err, r.getenv) {
			diff = term.Colorize(diff)
		}
		what := "Apply this change to " + p.Rel
		if p.IsNew {
			what = "Create " + p.Rel
		}
		if p.Protected != "" {
			what += " (a protected file)"
		}
		fmt.Fprint(r.s.Err, diff)
		key, err := r.lines.ReadKey(ctx, what+": accept [a], reject [r], or edit [e]? ")
		if err != nil {
			return agent.Decision{}, err
		}
		switch strings.ToLower(key) {
		case "a", "y", "yes", "accept":
			if p.Protected != "" {
				ok, err := confirmProtected(ctx, r.lines, r.s.Err, p, "write it")
				if err != nil {
					return agent.Decision{}, err
				}
				if !ok {
					return agent.Decision{Accepted: false, Content: content, Where: "the terminal"}, nil
				}
			}
			return agent.Decision{Accepted: true, Content: content, Where: "the terminal"}, nil
		case "r", "n", "no", "reject":
			return agent.Decision{Accepted: false, Content: content, Where: "the terminal"}, nil
		case "e", "edit":
			out, err := term.Edit(ctx, term.EditOptions{Editor: term.EditorCommand(r.getenv), In: r.s.In, Out: r.s.Err}, p.Rel, content)
			if err != nil {
				fmt.Fprintf(r.s.Err, "Editing failed: %v. The proposal is unchanged.\n", err)
			} else if out != content {
				content, edited = out, true
			}
		default:
			fmt.Fprintln(r.s.Err, "Please answer a (accept), r (reject) or e (edit).")
		}
	}
}

// confirmProtected has the person allow the protected file of p by typing
// its name, after saying why it is protected; any other answer is no.
// what is what the answer lets gemkit do ("write it").
func confirmProtected(ctx context.Context, lines *term.Lines, w io.Writer, p agent.Proposal, what string) (bool, error) {
	fmt.Fprintf(w, "gemkit: %s.\n", extension.Printable(p.Protected))
	line, err := lines.ReadLine(ctx, fmt.Sprintf("To %s, type its name (%s); anything else rejects the edit: ", what, extension.Printable(p.Rel)))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(line) == p.Rel, nil
}

// askYesNo asks question on the person's terminal and reads y/N.
func askYesNo(ctx context.Context, lines *term.Lines, question string) (bool, error) {
	line, err := lines.ReadLine(ctx, question+" [y/N]: ")
	if err != nil {
		return false, err
	}
	return isYes(line), nil
}

// isYes reads an answer to a y/N question: y or yes, in any case.
func isYes(answer string) bool {
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
