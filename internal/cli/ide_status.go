package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
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
				return err
			}
			return ideReport(a.Out, f.json, r, printStatus, r.Connect == nil || r.Connect.OK)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&noConnect, "no-connect", false, "only read the discovery files")
	return cmd
}

// printStatus writes the status report as text: the folder, the editor
// process, every file in the CLI's order, its choice, and the connect.
func printStatus(w io.Writer, r *client.StatusReport) {
	v := statusWords(r)
	if v.qwen {
		fmt.Fprintf(w, "Qwen Code's lock folder: %s\n", r.Dir)
	} else {
		fmt.Fprintf(w, "Discovery directory: %s\n", r.Dir)
	}
	fmt.Fprintf(w, "Editor process:      pid %d (%s) %s%s\n", r.Process.PID, processSource(r.Process.Source), ideAbbrev(r.Process.Command, 60), processNote(r))
	fmt.Fprintf(w, "Current directory:   %s\n", r.Cwd)
	if r.DirError != "" {
		fmt.Fprintf(w, "\n%s\n", r.DirError)
	}
	fmt.Fprintf(w, "\n%s (%d), in the order %s considers them:\n", v.files, len(r.Files), v.cli)
	for _, file := range r.Files {
		printStatusFile(w, file, v.qwen)
	}
	fmt.Fprintln(w)
	printStatusChoice(w, r, v)
	if r.Connect != nil {
		printStatusConnect(w, r.Connect, v)
	}
}

// statusWording is how the status report names things for the CLI it
// stands in for.
type statusWording struct {
	qwen bool
	// cli is who decides, files what it reads ("Discovery files"), file
	// one of them, envPort the variable of its port, terminals why the
	// terminal does not name the editor.
	cli, files, file, envPort, terminals string
	// noCompanion: neither a file nor the environment names an endpoint.
	noCompanion bool
}

func statusWords(r *client.StatusReport) statusWording {
	v := statusWording{cli: "the CLI", files: "Discovery files", envPort: ide.EnvServerPort, terminals: "TERM_PROGRAM is not a supported editor"}
	if r.Agent == client.AgentQwen {
		v = statusWording{qwen: true, cli: "Qwen Code", files: "Lock files", envPort: ide.EnvQwenServerPort, terminals: "TERM_PROGRAM is not vscode"}
	}
	v.file = strings.TrimSuffix(strings.ToLower(v.files), "s")
	v.noCompanion = r.Chosen == "" && len(r.Endpoints) == 0
	return v
}

// printStatusFile writes one file: its facts, why it is ignored or what
// its workspace holds, and the editor it names.
func printStatusFile(w io.Writer, file client.FileStatus, qwen bool) {
	mark := " "
	if file.Chosen {
		mark = "*"
	}
	fmt.Fprintf(w, " %s %s  (%s)\n", mark, file.Name, strings.Join(fileFacts(file, qwen), ", "))
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

// fileFacts are what decides a file's place: for Qwen Code where it was
// found and its ppid, for Gemini CLI its pid and name.
func fileFacts(file client.FileStatus, qwen bool) []string {
	if qwen {
		facts := []string{qwenSource(file)}
		if file.PPID != 0 && file.Alive {
			facts = append(facts, fmt.Sprintf("ppid %d running", file.PPID))
		} else if file.PPID != 0 {
			facts = append(facts, fmt.Sprintf("ppid %d not running", file.PPID))
		}
		return facts
	}
	var facts []string
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
	return facts
}

// printStatusChoice writes the file this directory would use, the editor
// as the CLI sees it, and the endpoints in the order they are tried.
func printStatusChoice(w io.Writer, r *client.StatusReport, v statusWording) {
	switch {
	case r.Chosen != "":
		fmt.Fprintf(w, "This directory would use %s:\n  %s\n", r.Chosen, r.Reason)
	case v.noCompanion:
		fmt.Fprintf(w, "No companion to connect to: no usable %s and no %s.\n", v.file, v.envPort)
	default:
		fmt.Fprintf(w, "This directory would use no %s, only the environment.\n", v.file)
		if r.Plan != nil && errors.Is(r.Plan.Workspace, discovery.ErrNoWorkspace) {
			// The CLI's own words then name no cause (doctor gives the fix).
			env := ide.EnvWorkspacePath
			if v.qwen {
				env = ide.EnvQwenWorkspacePath
			}
			fmt.Fprintf(w, "Workspace: none (%s is not set), so %s refuses before it tries an endpoint\n", env, v.cli)
		}
	}
	switch {
	case r.IDE != nil:
		fmt.Fprintf(w, "Editor as %s sees it: %s\n", v.cli, r.IDE.DisplayName)
	case r.Chosen == "":
		fmt.Fprintf(w, "Editor as %s sees it: none (no %s's ideInfo, and %s)\n", v.cli, v.file, v.terminals)
	default:
		fmt.Fprintf(w, "Editor as %s sees it: none (the file has no ideInfo, and %s): %s would refuse to connect\n", v.cli, v.terminals, v.cli)
	}
	for i, ep := range r.Endpoints {
		fmt.Fprintf(w, "Endpoint %d: %s\n", i+1, ep)
	}
}

// printStatusConnect writes how the connect went.
func printStatusConnect(w io.Writer, c *client.ConnectStatus, v statusWording) {
	switch {
	case v.noCompanion:
		who := "a Gemini CLI"
		if v.qwen {
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
	case discovery.QwenEnvPortFile:
		return "named by " + ide.EnvQwenServerPort
	case discovery.QwenLegacyPIDFile:
		return "legacy file of the editor pid"
	case discovery.QwenLegacyEnvPortFile:
		return "legacy file of " + ide.EnvQwenServerPort
	}
	return "newest first"
}

func processSource(s discovery.ProcessSource) string {
	switch s {
	case discovery.PIDFromEnv:
		return "from " + ide.EnvPID
	case discovery.PIDAboveShell:
		return "above the terminal's shell"
	case discovery.PIDTopmost:
		return "top-most ancestor, no shell found"
	case discovery.PIDFromTable:
		return "from the process table"
	}
	return string(s)
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
