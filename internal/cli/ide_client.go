package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/client"
	"github.com/gemkit/gemkit/ide/conformance"
)

// clientFlags are the flags every client command shares: where to look
// and how to reach the companion, overriding what the real CLI would
// decide on its own.
type clientFlags struct {
	dir    string
	idePID int
	host   string
	json   bool
}

func (f *clientFlags) register(cmd *cobra.Command, withJSON bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "discovery-dir", "", "directory of the discovery files (default: $TMPDIR/gemini/ide)")
	fl.IntVar(&f.idePID, "ide-pid", 0, "pid of the editor (default: "+ide.EnvPID+", else the process-tree walk)")
	fl.StringVar(&f.host, "host", "", "host to dial (default: 127.0.0.1, or host.docker.internal in a container, as the real CLI)")
	if withJSON {
		fl.BoolVar(&f.json, "json", false, "print JSON for scripts")
	}
}

func (f *clientFlags) options() client.Options {
	return client.Options{Dir: f.dir, IDEPID: f.idePID, Host: f.host, Logger: slog.Default(), ClientName: "gemkit"}
}

func addIDEClientCommands(parent *cobra.Command, s Streams) {
	parent.AddCommand(newIDEStatusCmd(s), newIDEDoctorCmd(s), newIDEWatchCmd(s), newIDEDiffCmd(s), newIDECheckCmd(s))
}

func ideJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newIDEStatusCmd(s Streams) *cobra.Command {
	var f clientFlags
	var noConnect bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the IDE companions, which one this directory would use and whether it connects",
		Long: `List every discovery file, say which one a Gemini CLI started in this directory
would pick and why (the real CLI's rules), and try to connect to it.
Exits 1 when no companion connects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := client.Inspect(cmd.Context(), f.options(), !noConnect)
			if err != nil {
				return withExitCode(ExitError, err)
			}
			if f.json {
				if err := ideJSON(s.Out, r); err != nil {
					return withExitCode(ExitError, err)
				}
			} else {
				printStatus(s.Out, r)
			}
			if r.Connect != nil && !r.Connect.OK {
				return withExitCode(ExitNo, nil)
			}
			return nil
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&noConnect, "no-connect", false, "only read the discovery files")
	return cmd
}

func printStatus(w io.Writer, r *client.StatusReport) {
	fmt.Fprintf(w, "Discovery directory: %s\n", r.Dir)
	fmt.Fprintf(w, "Editor process:      pid %d (%s) %s\n", r.Process.PID, processSource(r.Process.Source), ideAbbrev(r.Process.Command, 60))
	fmt.Fprintf(w, "Current directory:   %s\n", r.Cwd)
	if r.DirError != "" {
		fmt.Fprintf(w, "\nThe directory cannot be read: %s\n", r.DirError)
	}
	fmt.Fprintf(w, "\nDiscovery files (%d), in the order the CLI considers them:\n", len(r.Files))
	for _, file := range r.Files {
		mark := " "
		if file.Chosen {
			mark = "*"
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
		fmt.Fprintf(w, " %s %s  (%s)\n", mark, file.Name, strings.Join(facts, ", "))
		switch {
		case file.Error != "":
			fmt.Fprintf(w, "     ignored: %s\n", file.Error)
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
	if r.Chosen != "" {
		fmt.Fprintf(w, "This directory would use %s:\n  %s\n", r.Chosen, r.Reason)
	} else {
		fmt.Fprintln(w, "This directory would use no discovery file.")
	}
	if r.IDE != nil {
		fmt.Fprintf(w, "Editor as the CLI sees it: %s\n", r.IDE.DisplayName)
	} else {
		fmt.Fprintln(w, "Editor as the CLI sees it: none (no ideInfo, and TERM_PROGRAM is not a supported editor): the real CLI would refuse to connect")
	}
	for i, ep := range r.Endpoints {
		fmt.Fprintf(w, "Endpoint %d: %s\n", i+1, ep)
	}
	if c := r.Connect; c != nil {
		if c.OK {
			diff := "diffing enabled"
			if !c.Diffing {
				diff = "diffing DISABLED (openDiff/closeDiff not both listed)"
			}
			fmt.Fprintf(w, "Connect: ok, %s %s over %s; tools %s; %s\n", c.Server.Name, c.Server.Version, c.Endpoint.Transport, strings.Join(c.Tools, ", "), diff)
		} else {
			fmt.Fprintf(w, "Connect: FAILED: %s\n", c.Error)
			for _, a := range c.Attempts {
				fmt.Fprintf(w, "  tried %s\n", a)
			}
		}
	}
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

func ideAbbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
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

func newIDEDoctorCmd(s Streams) *cobra.Command {
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
			d, err := client.Doctor(cmd.Context(), f.options())
			if err != nil {
				return withExitCode(ExitError, err)
			}
			if f.json {
				if err := ideJSON(s.Out, d); err != nil {
					return withExitCode(ExitError, err)
				}
			} else {
				printDoctor(s.Out, d)
			}
			if !d.Works {
				return withExitCode(ExitNo, nil)
			}
			return nil
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

// ideConnect connects as the real CLI would, with a bound on the attempt.
func ideConnect(ctx context.Context, o client.Options) (*client.Client, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, _, err := client.Connect(cctx, o)
	return c, err
}

func newIDEWatchCmd(s Streams) *cobra.Command {
	var f clientFlags
	var once bool
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print the editor's context as it changes",
		Long: `Connect to the IDE companion as the CLI would and print the editor's context
(open files, active file, cursor, selection, trust) each time it changes.
With --json, one JSON object per line. Ends when the connection is lost
(exit 1) or on Ctrl-C (exit 0).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWatch(cmd.Context(), s, f, once)
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
	Trusted *bool         `json:"trusted,omitempty"`
}

func runWatch(ctx context.Context, s Streams, f clientFlags, once bool) error {
	events := make(chan watchEvent, 64)
	o := f.options()
	c, err := ideConnect(ctx, o)
	if err != nil {
		return withExitCode(ExitError, err)
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
		fmt.Fprintf(s.Out, "Connected to %s %s (%s). Watching; Ctrl-C to stop.\n", c.Server().Name, c.Server().Version, c.Endpoint())
	}
	if cur := c.Context(); cur != nil {
		send(watchEvent{Event: "context", Context: cur})
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			printWatchEvent(s.Out, e, f.json)
			if e.Event == "context" && once {
				return nil
			}
			if e.Event == "state" && e.State.Status == client.Disconnected {
				return withExitCode(ExitNo, errors.New(ideFirstLine(e.State.Details)))
			}
		}
	}
}

func ideFirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func printWatchEvent(w io.Writer, e watchEvent, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	ts := e.Time.Format("15:04:05.000")
	switch e.Event {
	case "state":
		fmt.Fprintf(w, "%s %s %s\n", ts, e.State.Status, ideFirstLine(e.State.Details))
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

func newIDEDiffCmd(s Streams) *cobra.Command {
	var f clientFlags
	var newFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "diff FILE [--new-file F]",
		Short: "Show a proposed change of FILE in the editor and apply it if accepted",
		Long: `Show the proposed new content of FILE (from --new-file, else standard input)
as a diff in the editor, and wait for the person. Accepted: FILE is
replaced atomically with the final text, including their edits (exit 0).
Rejected: FILE is left untouched (exit 1). Errors: exit 2.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), s, f, args[0], newFile, timeout)
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&newFile, "new-file", "", "file holding the proposed content (default: standard input)")
	cmd.Flags().DurationVar(&timeout, "timeout", ide.DiffTimeout, "how long to wait for the answer")
	return cmd
}

func runDiff(ctx context.Context, s Streams, f clientFlags, target, newFile string, timeout time.Duration) error {
	path, err := filepath.Abs(target)
	if err != nil {
		return withExitCode(ExitError, err)
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return withExitCode(ExitError, fmt.Errorf("%s is not a regular file", path))
	}
	var proposal []byte
	if newFile != "" {
		proposal, err = os.ReadFile(newFile)
	} else {
		if s.In == nil {
			return withExitCode(ExitError, errors.New("no --new-file and no standard input"))
		}
		proposal, err = io.ReadAll(io.LimitReader(s.In, ide.MaxRequestBody+1))
		if err == nil && len(proposal) > ide.MaxRequestBody {
			err = fmt.Errorf("the proposal is larger than %d bytes", ide.MaxRequestBody)
		}
	}
	if err != nil {
		return withExitCode(ExitError, fmt.Errorf("read the proposal: %w", err))
	}
	c, err := ideConnect(ctx, f.options())
	if err != nil {
		return withExitCode(ExitError, err)
	}
	defer c.Close(context.Background())
	if !c.DiffingEnabled() {
		return withExitCode(ExitError, errors.New("the companion does not offer diffs (openDiff and closeDiff are not both listed)"))
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d, err := c.StartDiff(wctx, path, string(proposal))
	if err != nil {
		return withExitCode(ExitError, err)
	}
	fmt.Fprintf(s.Err, "Waiting for your answer in %s…\n", c.Server().Name)
	out, err := d.Wait(wctx)
	if err != nil {
		return withExitCode(ExitError, err)
	}
	if !out.Accepted {
		fmt.Fprintf(s.Err, "Rejected: %s is unchanged.\n", path)
		return withExitCode(ExitNo, nil)
	}
	// Write through a symbolic link to its target, so that the link stays.
	dest := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		dest = real
	}
	if err := ideWriteFileAtomic(dest, []byte(out.Content)); err != nil {
		return withExitCode(ExitError, fmt.Errorf("accepted, but writing %s failed (it is unchanged): %w", path, err))
	}
	fmt.Fprintf(s.Err, "Accepted: wrote %s (%d bytes).\n", path, len(out.Content))
	return nil
}

// ideWriteFileAtomic replaces path with data through a temporary file in the
// same directory and a rename, keeping the file's mode (0644 for a new
// file), so that a reader never sees half a file.
func ideWriteFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".gemkit-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func newIDECheckCmd(s Streams) *cobra.Command {
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
			r, err := conformance.Run(cmd.Context(), conformance.Options{Client: f.options(), Interactive: interactive, Out: s.Err})
			if err != nil {
				return withExitCode(ExitError, err)
			}
			if f.json {
				if err := ideJSON(s.Out, r); err != nil {
					return withExitCode(ExitError, err)
				}
			} else {
				printCheck(s.Out, r)
			}
			if r.Failed() > 0 {
				return withExitCode(ExitNo, nil)
			}
			return nil
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
