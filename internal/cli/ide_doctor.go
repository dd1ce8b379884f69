package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/ide/client"
)

func newIDEDoctorCmd(a *app) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Explain why the CLI would not connect to an IDE companion, and what to do",
		Long: `Examine every discovery file and IDE environment variable and say, in words
you can act on, what is wrong: a dead editor, another user's file, loose
permissions, a directory outside the workspace, a closed port, a refused
token, missing tools, the CLI's terminal check. Exits 1 when no companion
would work from this directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := client.Doctor(cmd.Context(), a.clientOptions(f))
			if err != nil {
				return withExitCode(ExitError, err)
			}
			return ideReport(a.Out, f.json, d, printDoctor, d.Works)
		},
	}
	f.register(cmd, true)
	return cmd
}

func printDoctor(w io.Writer, d *client.DoctorReport) {
	for _, fd := range d.Findings {
		tag := map[string]string{"error": "ERROR", "warning": "warn ", "ok": "ok   "}[fd.Severity]
		fmt.Fprintf(w, "%s %s: %s\n", tag, fd.Subject, fd.Message)
		if fd.Fix != "" {
			fmt.Fprintf(w, "      → %s\n", fd.Fix)
		}
	}
	if d.Works {
		fmt.Fprintln(w, "\nThe CLI would connect from here.")
	} else {
		fmt.Fprintln(w, "\nNo companion would work from here.")
	}
}
