package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/term"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// session is what an agent command sets up: the model, the extensions,
// the IDE connection and the agent.
type session struct {
	agent *agent.Agent
	ide   *client.Client
	// ideName is the editor's display name when connected.
	ideName string
	// text shows the model's words.
	text *turnText
}

func (s *session) close() {
	if s.ide != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.ide.Close(ctx) // closes pending diffs in the editor first
	}
}

// connectIDE connects to the companion the real Gemini CLI would use from
// ws, if any; without one the agent simply has no IDE context.
func (s *session) connectIDE(ctx context.Context, ap *app, ws string) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	o := ap.clientOptions(clientFlags{})
	o.Cwd, o.ClientName, o.ClientVersion = ws, "gemkit-agent", buildVersion()
	c, plan, err := client.Connect(cctx, o)
	if err != nil {
		if plan == nil || len(plan.Endpoints) == 0 {
			ap.log.Debug("no IDE companion", "err", err)
			return
		}
		// A companion is there but does not connect: say why (in a
		// container, most often a shell without the export line), since
		// the edits would otherwise be reviewed here without a word.
		why := err.Error()
		var ce *client.ConnectError
		if errors.As(err, &ce) && len(ce.Attempts) > 0 {
			// The attempts name the cause; the CLI's own message does not.
			why = ""
			for i, at := range ce.Attempts {
				if i > 0 {
					why += "; "
				}
				why += fmt.Sprintf("%s: %v", at.Endpoint, at.Err)
			}
		}
		fmt.Fprintf(ap.Err, "gemkit: an IDE companion serves %s but does not connect, so the model gets no editor context and edits are reviewed here (gemkit ide doctor says more): %s\n", ws, why)
		return
	}
	s.ide = c
	s.ideName = "the IDE"
	if plan != nil && plan.IDE != nil && plan.IDE.DisplayName != "" {
		s.ideName = plan.IDE.DisplayName
	}
	// The first context arrives just after connecting.
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer wcancel()
	_, _ = c.WaitContext(wctx)
}

// setupSession sets up the agent of run and chat: the model and the
// extensions, the IDE companion of the workspace (unless --no-ide), and
// the person's side, from lines (nil: nobody can be asked): the edits'
// reviewer and the question before an extension tool runs.
func setupSession(ctx context.Context, f *agentFlags, ap *app, lines *term.Lines) (*session, error) {
	text := &turnText{w: ap.Out, escape: isTerminal(ap.Out)}
	b, err := f.setup(ctx, ap, func(w model.Wait) {
		text.turn()
		fmt.Fprintln(ap.Err, waitLine(w))
	})
	if err != nil {
		return nil, err
	}
	sess := &session{text: text}
	if !f.noIDE {
		sess.connectIDE(ctx, ap, b.ws)
	}
	var ask toolrun.Asker
	if lines != nil {
		ask = func(ctx context.Context, q toolrun.ConsentRequest) (toolrun.Answer, error) {
			ok, err := askYesNo(ctx, lines, consentQuestion(q)+"Allow?")
			return toolrun.AllowIf(ok), err
		}
	}
	sess.agent = b.agent(f, ap, agent.LocalHost{Reviewer: sess.reviewer(f, ap, lines)}, ask)
	sess.agent.AllowFlag = func(rel string) string { return "--allow-protected " + rel }
	sess.agent.OnCodeStart = codeStartLine(ap.Err, isTerminal(ap.Err))
	if sess.ide != nil {
		sess.agent.IDE = sess.ide
	}
	return sess, nil
}

// reviewer is who decides the model's edits: --yes, the IDE's diff
// (confirmed on the terminal first for a protected file), the terminal,
// or nobody.
func (s *session) reviewer(f *agentFlags, ap *app, lines *term.Lines) agent.Reviewer {
	switch {
	case f.yes:
		return agent.YesReviewer{}
	case s.ide != nil && s.ide.DiffingEnabled():
		ide := &agent.IDEReviewer{Client: s.ide, Name: s.ideName, Waiting: func(p agent.Proposal) {
			fmt.Fprintf(ap.Err, "Waiting for your answer in %s: accept (you may change it first) or reject the diff of %s there…\n", s.ideName, p.Rel)
		}}
		if lines != nil {
			ide.ConfirmProtected = func(ctx context.Context, p agent.Proposal) (bool, error) {
				return confirmProtected(ctx, lines, ap.Err, p, "show its diff in "+s.ideName)
			}
		}
		return ide
	case lines != nil:
		return &terminalReviewer{s: ap.Streams, getenv: ap.getenv, lines: lines}
	}
	return agent.NoReviewer{Instead: "rerun with --yes"}
}
