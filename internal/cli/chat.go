package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/term"
)

func newChatCmd(ap *app) *cobra.Command {
	s := ap.Streams
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with a model that can use the extensions' tools and propose edits",
		Long: `Chat is a conversation in the terminal with the same model, tools and edits as
` + "`gemkit run`" + `: the reply streams as it comes, each tool call shows one line
with its outcome, and proposed edits go to the IDE when a companion is
connected, else are shown here as diffs to accept or reject. A tool whose
extension you have not agreed to asks first, with its permissions.

Your editor's context (open files, cursor, selection) goes with each message
as it is then. Ctrl-C stops the current turn (pending diffs are closed and
tools stopped); Ctrl-D on an empty line ends the chat.`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ctrl-C ends a turn, not the chat: handle the signals here.
			base, stop := context.WithCancel(context.WithoutCancel(cmd.Context()))
			defer stop()
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)

			lines := term.NewLines(s.In, s.Out)
			sess, err := setupSession(base, &f, ap, lines)
			if err != nil {
				return withExitCode(ExitError, err)
			}
			defer sess.close()
			a := sess.agent
			// On a terminal, **bold** in the reply shows bold.
			var bold *term.BoldWriter
			if term.ColorEnabled(s.Out, ap.getenv) {
				bold = term.NewBoldWriter(s.Out)
				sess.text.w = bold
			}
			a.OnText = sess.text.write
			a.OnEvent = func(e agent.Event) {
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
			where := "no IDE companion"
			if sess.ide != nil {
				where = "connected to " + sess.ideName
			}
			fmt.Fprintf(s.Err, "gemkit chat with %s (%s). Ctrl-C stops a turn, Ctrl-D ends.\n", a.Model.Describe(), where)

			// turnCancel cancels the running turn; nil between turns.
			turns := make(chan context.CancelFunc, 1)
			go func() {
				var cancel context.CancelFunc
				for {
					select {
					case c := <-turns:
						cancel = c
					case sig := <-sigs:
						if sig == syscall.SIGTERM {
							stop()
							if cancel != nil {
								cancel()
							}
							return
						}
						if cancel != nil {
							cancel()
						} else {
							fmt.Fprint(s.Err, "\n(Ctrl-D ends the chat)\n> ")
						}
					case <-base.Done():
						return
					}
				}
			}()
			for {
				line, err := lines.ReadLine(base, "> ")
				if errors.Is(err, io.EOF) {
					fmt.Fprintln(s.Out)
					return nil
				}
				if err != nil {
					return nil
				}
				prompt := strings.TrimSpace(line)
				if prompt == "" {
					continue
				}
				tctx, tcancel := context.WithCancel(base)
				turns <- tcancel
				out := a.Run(tctx, prompt)
				turns <- nil
				tcancel()
				if bold != nil {
					bold.Close()
				}
				sess.text.end()
				switch out.Status {
				case agent.Cancelled:
					if base.Err() != nil {
						return withExitCode(ExitCancelled, nil)
					}
					fmt.Fprintln(s.Err, "(turn stopped)")
				case agent.Done:
				default:
					fmt.Fprintf(s.Err, "gemkit: %v\n", out.Err)
				}
			}
		},
	}
	f.register(cmd)
	return cmd
}
