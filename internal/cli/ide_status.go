package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/client"
)

func newIDEStatusCmd(a *app) *cobra.Command {
	var f clientFlags
	var noConnect bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the IDE companions, which one this directory would use and whether it connects",
		Long: `List every discovery file, say which one a Gemini CLI started in this directory
would pick and why (the real CLI's rules), and try to connect to it.
With --as qwen, the same for Qwen Code: its lock files ($QWEN_HOME/ide, else
~/.qwen/ide), in the order it reads them, and its variables.
Exits 1 when no companion connects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := client.Inspect(cmd.Context(), a.clientOptions(f), !noConnect)
			if err != nil {
				return withExitCode(ExitError, err)
			}
			return ideReport(a.Out, f.json, r, printStatus, r.Connect == nil || r.Connect.OK)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&noConnect, "no-connect", false, "only read the discovery files")
	return cmd
}

func printStatus(w io.Writer, r *client.StatusReport) {
	qwen := r.Agent == client.AgentQwen
	cli, files, envPort := "the CLI", "Discovery files", ide.EnvServerPort
	if qwen {
		cli, files, envPort = "Qwen Code", "Lock files", ide.EnvQwenServerPort
		fmt.Fprintf(w, "Qwen Code's lock folder: %s\n", r.Dir)
	} else {
		fmt.Fprintf(w, "Discovery directory: %s\n", r.Dir)
	}
	fmt.Fprintf(w, "Editor process:      pid %d (%s) %s%s\n", r.Process.PID, processSource(r.Process.Source), ideAbbrev(r.Process.Command, 60), processNote(r))
	fmt.Fprintf(w, "Current directory:   %s\n", r.Cwd)
	if r.DirError != "" {
		fmt.Fprintf(w, "\n%s\n", r.DirError)
	}
	fmt.Fprintf(w, "\n%s (%d), in the order %s considers them:\n", files, len(r.Files), cli)
	for _, file := range r.Files {
		mark := " "
		if file.Chosen {
			mark = "*"
		}
		var facts []string
		switch {
		case qwen:
			facts = append(facts, qwenSource(file))
			if file.PPID != 0 && file.Alive {
				facts = append(facts, fmt.Sprintf("ppid %d running", file.PPID))
			} else if file.PPID != 0 {
				facts = append(facts, fmt.Sprintf("ppid %d not running", file.PPID))
			}
		default:
			if file.PIDMatch {
				facts = append(facts, "editor pid")
			}
			if file.Alive {
				facts = append(facts, "alive")
			} else {
				facts = append(facts, "pid not running")
			}
			if file.Legacy {
				facts = append(facts, "legacy name")
			}
		}
		fmt.Fprintf(w, " %s %s  (%s)\n", mark, file.Name, strings.Join(facts, ", "))
		switch {
		case file.Error != "":
			fmt.Fprintf(w, "     ignored: %s\n", file.Error)
		case file.Stale != "":
			fmt.Fprintf(w, "     Qwen Code deletes it when it looks: %s\n", file.Stale)
		case file.InWorkspace:
			fmt.Fprintf(w, "     workspace %s holds this directory\n", ideDeref(file.WorkspacePath))
		default:
			fmt.Fprintf(w, "     workspace %s: %s\n", ideDeref(file.WorkspacePath), file.Workspace)
		}
		if file.IDEInfo != nil {
			fmt.Fprintf(w, "     editor %s (%s)\n", file.IDEInfo.DisplayName, file.IDEInfo.Name)
		}
	}
	fmt.Fprintln(w)
	noCompanion := r.Chosen == "" && len(r.Endpoints) == 0
	file := strings.TrimSuffix(strings.ToLower(files), "s")
	switch {
	case r.Chosen != "":
		fmt.Fprintf(w, "This directory would use %s:\n  %s\n", r.Chosen, r.Reason)
	case noCompanion:
		fmt.Fprintf(w, "No companion to connect to: no usable %s and no %s.\n", file, envPort)
	default:
		fmt.Fprintf(w, "This directory would use no %s, only the environment.\n", file)
	}
	terminals := "TERM_PROGRAM is not a supported editor"
	if qwen {
		terminals = "TERM_PROGRAM is not vscode"
	}
	switch {
	case r.IDE != nil:
		fmt.Fprintf(w, "Editor as %s sees it: %s\n", cli, r.IDE.DisplayName)
	case r.Chosen == "":
		fmt.Fprintf(w, "Editor as %s sees it: none (no %s's ideInfo, and %s)\n", cli, file, terminals)
	default:
		fmt.Fprintf(w, "Editor as %s sees it: none (the file has no ideInfo, and %s): %s would refuse to connect\n", cli, terminals, cli)
	}
	for i, ep := range r.Endpoints {
		fmt.Fprintf(w, "Endpoint %d: %s\n", i+1, ep)
	}
	if c := r.Connect; c != nil {
		switch {
		case noCompanion:
			who := "a Gemini CLI"
			if qwen {
				who = "Qwen Code"
			}
			fmt.Fprintf(w, "Connect: FAILED: no companion (%s started here would say: %q)\n", who, c.Error)
		case c.OK:
			diff := "diffing enabled"
			switch {
			case c.Diffing:
			case client.NoDiffTools(c.Tools):
				diff = "diffing off (the editor cannot show diffs: the CLI asks in its own terminal)"
			default:
				diff = "diffing DISABLED (openDiff/closeDiff not both listed)"
			}
			tools := strings.Join(c.Tools, ", ")
			if tools == "" {
				tools = "none"
			}
			fmt.Fprintf(w, "Connect: ok, %s %s over %s; tools %s; %s\n", c.Server.Name, c.Server.Version, c.Endpoint.Transport, tools, diff)
		default:
			fmt.Fprintf(w, "Connect: FAILED: %s\n", c.Error)
			for _, a := range c.Attempts {
				fmt.Fprintf(w, "  tried %s\n", a)
			}
		}
	}
}

// processNote says what the editor process is when the discovery file
// that names it is gemkit's with no editor named (ideInfo "gemkit", what
// `gemkit ide serve` writes in a terminal): its pid is then the process
// that started gemkit, a shell, not an editor.
func processNote(r *client.StatusReport) string {
	for _, f := range r.Files {
		if f.PIDMatch && f.IDEInfo != nil && f.IDEInfo.Name == ide.DefaultIDEName {
			return ", which started gemkit ide serve (no editor: the file names gemkit)"
		}
	}
	return ""
}

// qwenSource says how Qwen Code came to read a file.
func qwenSource(f client.FileStatus) string {
	switch f.Source {
	case "env-port":
		return "named by " + ide.EnvQwenServerPort
	case "legacy-pid":
		return "legacy file of the editor pid"
	case "legacy-env-port":
		return "legacy file of " + ide.EnvQwenServerPort
	}
	return "newest first"
}

func processSource(s string) string {
	switch s {
	case "env":
		return "from " + ide.EnvPID
	case "shell":
		return "above the terminal's shell"
	case "top":
		return "top-most ancestor, no shell found"
	case "table":
		return "from the process table"
	}
	return s
}

func ideDeref(p *string) string {
	if p == nil {
		return "(none)"
	}
	if *p == "" {
		return `""`
	}
	return *p
}
