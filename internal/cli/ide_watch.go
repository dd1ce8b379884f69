package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
)

func newIDEWatchCmd(a *app) *cobra.Command {
	var f clientFlags
	var once bool
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print the editor's context as it changes",
		Long: `Connect to the IDE companion as the CLI would and print the editor's context
(open files, active file, cursor, selection, trust) each time it changes.
With --json, one JSON object per line. Ends when the connection is lost
(exit 1) or on Ctrl-C (exit 0); exits 2 at once when no companion can be
reached (run ` + "`gemkit ide doctor`" + `) or a flag is wrong.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWatch(cmd.Context(), a, f, once)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&once, "once", false, "print the first context and exit")
	return cmd
}

type watchEvent struct {
	Time    time.Time     `json:"time"`
	Event   string        `json:"event"`
	Context *ide.Context  `json:"context,omitempty"`
	State   *client.State `json:"state,omitempty"`
}

func runWatch(ctx context.Context, a *app, f clientFlags, once bool) error {
	events := make(chan watchEvent, 64)
	o := a.clientOptions(f)
	c, _, err := ideConnect(ctx, o)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	send := func(e watchEvent) {
		e.Time = time.Now()
		select {
		case events <- e:
		default: // a slow terminal drops intermediate states, never blocks the client
		}
	}
	c.OnContext(func(v *ide.Context) { send(watchEvent{Event: "context", Context: v}) })
	c.OnStateChange(func(st client.State) { send(watchEvent{Event: "state", State: &st}) })
	if !f.json {
		what := "Watching; Ctrl-C to stop."
		if once {
			what = "Printing the current context, then stopping."
		}
		fmt.Fprintf(a.Out, "Connected to %s %s (%s). %s\n", c.Server().Name, c.Server().Version, c.Endpoint(), what)
	}
	if cur := c.Context(); cur != nil {
		send(watchEvent{Event: "context", Context: cur})
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			printWatchEvent(a.Out, e, f.json)
			if e.Event == "context" && once {
				return nil
			}
			if e.Event == "state" && e.State.Status == client.Disconnected {
				return withExitCode(ExitNo, watchLost(*e.State))
			}
		case <-c.Done():
			// Print what came before the end; the "disconnected" event
			// itself may have been dropped by send, or not be queued yet.
			for drained := false; !drained; {
				select {
				case e := <-events:
					if e.Event != "state" || e.State.Status != client.Disconnected {
						printWatchEvent(a.Out, e, f.json)
					}
				default:
					drained = true
				}
			}
			st := c.State()
			printWatchEvent(a.Out, watchEvent{Time: time.Now(), Event: "state", State: &st}, f.json)
			return withExitCode(ExitNo, watchLost(st))
		}
	}
}

// watchLost says why watching ended, without the real CLI's advice to run its
// /ide command (setState in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts).
func watchLost(st client.State) error {
	_, why, _ := strings.Cut(st.Details, "\n")
	if why == "" {
		return errors.New("the connection to the IDE companion was lost")
	}
	return fmt.Errorf("the connection to the IDE companion was lost: %s", why)
}

func printWatchEvent(w io.Writer, e watchEvent, asJSON bool) {
	if asJSON {
		writeJSONLine(w, e)
		return
	}
	ts := e.Time.Format("15:04:05.000")
	switch e.Event {
	case "state":
		fmt.Fprintf(w, "%s %s %s\n", ts, e.State.Status, firstLine(e.State.Details))
	case "context":
		if e.Context == nil || e.Context.WorkspaceState == nil {
			fmt.Fprintf(w, "%s no context\n", ts)
			return
		}
		ws := e.Context.WorkspaceState
		trust := ""
		if ws.IsTrusted != nil {
			trust = map[bool]string{true: ", trusted", false: ", NOT trusted"}[*ws.IsTrusted]
		}
		fmt.Fprintf(w, "%s %d open file(s)%s\n", ts, len(ws.OpenFiles), trust)
		for _, file := range ws.OpenFiles {
			if !file.IsActive {
				fmt.Fprintf(w, "    %s\n", file.Path)
				continue
			}
			pos := ""
			if file.Cursor != nil {
				pos = fmt.Sprintf(":%d:%d", file.Cursor.Line, file.Cursor.Character)
			}
			sel := ""
			if file.SelectedText != "" {
				sel = fmt.Sprintf("  [selection: %d chars] %q", len([]rune(file.SelectedText)), ideAbbrev(strings.ReplaceAll(file.SelectedText, "\n", "⏎"), 40))
			}
			fmt.Fprintf(w, "  > %s%s%s\n", file.Path, pos, sel)
		}
	}
}
