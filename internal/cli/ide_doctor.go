package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/client"
)

func newIDEDoctorCmd(a *app) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Explain why the CLI would not connect to an IDE companion, and what to do",
		Long: `Examine every discovery file and IDE environment variable and say, in words
you can act on, what is wrong: a dead editor, another user's file, loose
permissions, a directory outside the workspace, a closed port, a refused
token, missing tools, the CLI's terminal check. With --as qwen, the same for
Qwen Code: its settings, its lock files, its variables. Exits 1 when no
companion would work from this directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := client.Doctor(cmd.Context(), a.clientOptions(f))
			if err != nil {
				return err
			}
			return ideReport(a.Out, f.json, d, printDoctor, d.Works)
		},
	}
	f.register(cmd, true)
	return cmd
}

func printDoctor(w io.Writer, d *client.DoctorReport) {
	for _, fd := range d.Findings {
		tag := map[client.Severity]string{client.SeverityError: "ERROR", client.SeverityWarning: "warn ", client.SeverityOK: "ok   "}[fd.Severity]
		fmt.Fprintf(w, "%s %s: %s\n", tag, fd.Subject, fd.Message)
		if fd.Fix != "" {
			fmt.Fprintf(w, "      → %s\n", fd.Fix)
		}
	}
	cli, forCLI := "The CLI", ""
	if d.Status != nil && d.Status.Agent == client.AgentQwen {
		cli, forCLI = "Qwen Code", " for Qwen Code"
	}
	if d.Works {
		fmt.Fprintf(w, "\n%s would connect from here.\n", cli)
	} else {
		fmt.Fprintf(w, "\nNo companion would work from here%s.\n", forCLI)
	}
}
