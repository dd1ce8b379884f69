package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/term"
)

// Exit codes of `gemkit run` beyond ExitOK, ExitNo and ExitError.
const (
	// ExitLimit: a limit (turns, output tokens) stopped the task.
	ExitLimit = 3
	// ExitCancelled: interrupted (Ctrl-C, SIGTERM), as shells report it.
	ExitCancelled = 130
)

// runTranscript is `gemkit run --json`'s output.
type runTranscript struct {
	Status   agent.Status    `json:"status"`
	ExitCode int             `json:"exitCode"`
	Error    string          `json:"error,omitempty"`
	Model    string          `json:"model"`
	IDE      string          `json:"ide,omitempty"`
	Protocol agent.Protocol  `json:"toolProtocol"`
	Turns    int             `json:"turns"`
	Text     string          `json:"text"`
	Events   []agent.Event   `json:"events"`
	Messages []model.Message `json:"messages"`
}

func newRunCmd(ap *app) *cobra.Command {
	s := ap.Streams
	var f agentFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run PROMPT",
		Short: "Do one task with a model, the extensions' tools and your files, then exit",
		Long: `Run sends PROMPT to the model with a summary of the extensions enabled here
and, when an IDE companion is found, your editor's context; it runs the tools
the model asks for (extension tools in their sandbox, read_doc, reading and
listing files in the workspace, proposing edits) until the model is done.

Proposed edits are shown as diffs in the IDE when a companion is connected
(accept, change or reject them there), else asked about on the terminal;
with --yes they are written without asking; with nobody to ask they are
refused. An extension tool needs your recorded consent (give it once with
` + "`gemkit extensions consent EXT --grant`" + `): run never asks for it.

The model's text goes to standard output, a line per tool call to standard
error; --json prints instead one JSON transcript at the end.

Exit status: 0 done, 2 error (configuration, the model's API), 3 a limit
(--max-turns, --max-output-tokens) stopped it, 130 interrupted.

See https://github.com/gemkit/gemkit/blob/main/docs/agent.md for models, endpoints and the config file.`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var lines *term.Lines
			if isTerminal(s.In) && !asJSON {
				lines = term.NewLines(s.In, s.Err)
			}
			sess, err := setupSession(ctx, &f, ap, lines)
			if err != nil {
				return withExitCode(ExitError, err)
			}
			defer sess.close()
			a := sess.agent
			tr := runTranscript{Model: a.Model.Describe(), IDE: sess.ideName, Events: []agent.Event{}}
			if !asJSON {
				a.OnText = sess.text.write
			}
			a.OnEvent = func(e agent.Event) {
				tr.Events = append(tr.Events, e)
				if asJSON {
					return
				}
				sess.text.turn()
				switch e.Type {
				case agent.EventToolCall:
					fmt.Fprintf(s.Err, "\n  ⚙ %s %s\n", extension.Printable(e.Name), argsLine(e.Args))
				case agent.EventToolResult:
					fmt.Fprintln(s.Err, toolLine(e))
				case agent.EventEditOutcome:
					fmt.Fprintf(s.Err, "  ✎ %s: %s\n", extension.Printable(e.Name), extension.Printable(e.Text))
				case agent.EventNotice:
					fmt.Fprintf(s.Err, "gemkit: %s\n", extension.PrintableText(e.Text))
				}
			}
			out := a.Run(ctx, args[0])
			code := ExitOK
			switch out.Status {
			case agent.MaxTurns, agent.MaxTokens:
				code = ExitLimit
			case agent.Cancelled:
				code = ExitCancelled
			case agent.Failed:
				code = ExitError
			}
			if asJSON {
				tr.Status, tr.ExitCode, tr.Protocol, tr.Turns, tr.Text, tr.Messages = out.Status, code, a.Protocol, out.Turns, out.Text, a.History()
				if out.Err != nil {
					tr.Error = out.Err.Error()
				}
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(tr); err != nil {
					return withExitCode(ExitError, err)
				}
				return withExitCode(code, nil)
			}
			sess.text.end()
			if code == ExitOK {
				return nil
			}
			err = out.Err
			if out.Status == agent.Cancelled {
				err = errors.New("interrupted: pending diffs were closed and running tools stopped; nothing was half-written")
			}
			return withExitCode(code, err)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON transcript (status, events, messages) instead of the text")
	return cmd
}
