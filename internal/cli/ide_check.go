package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/conformance"
)

func newIDECheckCmd(a *app) *cobra.Command {
	var f clientFlags
	var interactive bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that the IDE companion this directory would use works with the real CLI",
		Long: `Run conformance checks against the companion a CLI started here would pick:
its discovery file (fields, mode, owner), its token, Host and Origin
refusals, MCP initialize, tool schemas, the initial context on the event
stream and the openDiff/closeDiff results. With --interactive it also opens
two diffs and asks you to accept the first and reject the second in your
editor. Exits 1 when a check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := conformance.Run(cmd.Context(), conformance.Options{Client: a.clientOptions(f), Interactive: interactive, Out: a.Err})
			if err != nil {
				return err
			}
			return ideReport(a.Out, f.json, r, printCheck, r.Failed() == 0)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&interactive, "interactive", false, "also ask you to accept and reject a diff in the editor")
	return cmd
}

func printCheck(w io.Writer, r *conformance.Report) {
	if r.File != "" {
		fmt.Fprintf(w, "Discovery file: %s\n", r.File)
	}
	if r.Endpoint != "" {
		fmt.Fprintf(w, "Endpoint:       %s\n", r.Endpoint)
	}
	fmt.Fprintln(w)
	for _, res := range r.Results {
		tag := map[conformance.Outcome]string{conformance.Pass: "PASS", conformance.Fail: "FAIL", conformance.Warn: "WARN", conformance.Skip: "SKIP"}[res.Outcome]
		fmt.Fprintf(w, "%s  %-22s %s\n", tag, res.ID, res.Title)
		if res.Detail != "" && res.Outcome != conformance.Pass {
			fmt.Fprintf(w, "      %s\n", res.Detail)
		}
	}
	fmt.Fprintf(w, "\n%d checks, %d failed\n", len(r.Results), r.Failed())
}
