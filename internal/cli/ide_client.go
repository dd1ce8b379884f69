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
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/client"
	"github.com/gemkit/gemkit/ide/conformance"
	"github.com/gemkit/gemkit/ide/discovery"
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

// ideReport prints a command's report as JSON (--json) or as text, and
// exits 1 when the report's verdict ok is false, so that status, doctor and
// check answer scripts the same way.
func ideReport[R any](w io.Writer, asJSON bool, r R, printText func(io.Writer, R), ok bool) error {
	if asJSON {
		if err := ideJSON(w, r); err != nil {
			return withExitCode(ExitError, err)
		}
	} else {
		printText(w, r)
	}
	if !ok {
		return withExitCode(ExitNo, nil)
	}
	return nil
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
			return ideReport(s.Out, f.json, r, printStatus, r.Connect == nil || r.Connect.OK)
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
		fmt.Fprintf(w, "\n%s\n", r.DirError)
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
	noCompanion := r.Chosen == "" && len(r.Endpoints) == 0
	switch {
	case r.Chosen != "":
		fmt.Fprintf(w, "This directory would use %s:\n  %s\n", r.Chosen, r.Reason)
	case noCompanion:
		fmt.Fprintf(w, "No companion to connect to: no usable discovery file and no %s.\n", ide.EnvServerPort)
	default:
		fmt.Fprintln(w, "This directory would use no discovery file, only the environment.")
	}
	switch {
	case r.IDE != nil:
		fmt.Fprintf(w, "Editor as the CLI sees it: %s\n", r.IDE.DisplayName)
	case r.Chosen == "":
		fmt.Fprintln(w, "Editor as the CLI sees it: none (no discovery file's ideInfo, and TERM_PROGRAM is not a supported editor)")
	default:
		fmt.Fprintln(w, "Editor as the CLI sees it: none (the file has no ideInfo, and TERM_PROGRAM is not a supported editor): the real CLI would refuse to connect")
	}
	for i, ep := range r.Endpoints {
		fmt.Fprintf(w, "Endpoint %d: %s\n", i+1, ep)
	}
	if c := r.Connect; c != nil {
		switch {
		case noCompanion:
			fmt.Fprintf(w, "Connect: FAILED: no companion (a Gemini CLI started here would say: %q)\n", c.Error)
		case c.OK:
			diff := "diffing enabled"
			if !c.Diffing {
				diff = "diffing DISABLED (openDiff/closeDiff not both listed)"
			}
			fmt.Fprintf(w, "Connect: ok, %s %s over %s; tools %s; %s\n", c.Server.Name, c.Server.Version, c.Endpoint.Transport, strings.Join(c.Tools, ", "), diff)
		default:
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
			return ideReport(s.Out, f.json, d, printDoctor, d.Works)
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

// ideConnect connects as the real CLI would, with a bound on the attempt,
// and explains a failure in words a person can act on.
func ideConnect(ctx context.Context, o client.Options) (*client.Client, *client.Plan, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, p, err := client.Connect(cctx, o)
	if err != nil {
		return nil, nil, explainConnect(p, err)
	}
	return c, p, nil
}

// connectFailure is a failed connect as the commands report it: the real
// CLI's message (or, when there is no companion at all, that fact, since
// the real CLI's words then blame the terminal), each endpoint's own
// failure, and where to look next.
type connectFailure struct {
	msg string
	err error
}

func (e *connectFailure) Error() string { return e.msg }
func (e *connectFailure) Unwrap() error { return e.err }

func explainConnect(p *client.Plan, err error) error {
	var ce *client.ConnectError
	if p == nil || !errors.As(err, &ce) {
		return err
	}
	var b strings.Builder
	if p.Config == nil && len(p.Endpoints) == 0 {
		dir := discovery.Dir()
		if p.Choice != nil {
			dir = p.Choice.Dir
		}
		fmt.Fprintf(&b, "no IDE companion found: no usable discovery file in %s and no %s; start the companion in your editor", dir, ide.EnvServerPort)
	} else {
		b.WriteString(ce.Message)
	}
	for _, a := range ce.Attempts {
		fmt.Fprintf(&b, "\n  %s: %v", a.Endpoint, a.Err)
	}
	b.WriteString("\nRun `gemkit ide doctor` to see what is wrong and what to do.")
	return &connectFailure{msg: b.String(), err: err}
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
(exit 1) or on Ctrl-C (exit 0); exits 2 at once when no companion can be
reached (run ` + "`gemkit ide doctor`" + `) or a flag is wrong.`,
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
}

func runWatch(ctx context.Context, s Streams, f clientFlags, once bool) error {
	events := make(chan watchEvent, 64)
	o := f.options()
	c, _, err := ideConnect(ctx, o)
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
				return withExitCode(ExitNo, watchLost(*e.State))
			}
		case <-c.Done():
			// Print what came before the end; the "disconnected" event
			// itself may have been dropped by send, or not be queued yet.
			for drained := false; !drained; {
				select {
				case e := <-events:
					if e.Event != "state" || e.State.Status != client.Disconnected {
						printWatchEvent(s.Out, e, f.json)
					}
				default:
					drained = true
				}
			}
			st := c.State()
			printWatchEvent(s.Out, watchEvent{Time: time.Now(), Event: "state", State: &st}, f.json)
			return withExitCode(ExitNo, watchLost(st))
		}
	}
}

// watchLost says why watching ended, without the real CLI's advice to run
// its /ide command.
func watchLost(st client.State) error {
	_, why, _ := strings.Cut(st.Details, "\n")
	if why == "" {
		return errors.New("the connection to the IDE companion was lost")
	}
	return fmt.Errorf("the connection to the IDE companion was lost: %s", why)
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
	proposal, err := readProposal(s, newFile)
	if err != nil {
		return withExitCode(ExitError, fmt.Errorf("read the proposal: %w", err))
	}
	c, plan, err := ideConnect(ctx, f.options())
	if err != nil {
		return withExitCode(ExitError, err)
	}
	defer c.Close(context.Background())
	if !c.DiffingEnabled() {
		return withExitCode(ExitError, errors.New("the companion does not offer diffs (openDiff and closeDiff are not both listed)"))
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unanswered := func(err error) error {
		switch {
		case ctx.Err() != nil:
			err = errors.New("interrupted: the diff was closed in the editor")
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrDiffTimeout):
			err = fmt.Errorf("no answer within %v: the diff was closed in the editor", timeout)
		}
		return withExitCode(ExitError, fmt.Errorf("%w; %s is unchanged", err, path))
	}
	d, err := c.StartDiff(wctx, path, string(proposal))
	if err != nil {
		return unanswered(err)
	}
	fmt.Fprintf(s.Err, "Waiting for your answer in %s: accept or reject the diff of %s there (Ctrl-C cancels)…\n", plan.IDE.DisplayName, filepath.Base(path))
	out, err := d.Wait(wctx)
	if err != nil {
		return unanswered(err)
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
		// Keep what the person accepted (their edits included): print it.
		fmt.Fprint(s.Out, out.Content)
		return withExitCode(ExitError, fmt.Errorf("accepted, but writing %s failed (it is unchanged; the accepted text was printed on standard output): %w", path, err))
	}
	fmt.Fprintf(s.Err, "Accepted: wrote %s (%d bytes).\n", path, len(out.Content))
	return nil
}

// readProposal reads the proposed content from file, or from standard
// input when file is "", bounded like a companion's request body.
func readProposal(s Streams, file string) ([]byte, error) {
	in := s.In
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	} else if in == nil {
		return nil, errors.New("no --new-file and no standard input")
	} else if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(s.Err, "Reading the proposed content from standard input; end it with Ctrl-D (or pass --new-file).")
	}
	data, err := io.ReadAll(io.LimitReader(in, ide.MaxRequestBody+1))
	switch {
	case err != nil:
	case len(data) > ide.MaxRequestBody:
		err = fmt.Errorf("the proposal is larger than %d bytes, more than a companion accepts", ide.MaxRequestBody)
	case !utf8.Valid(data):
		// JSON would carry U+FFFD in place of the bad bytes, and the
		// accepted text written back would silently differ.
		err = errors.New("the proposal is not UTF-8 text; a diff in the editor carries text only")
	}
	return data, err
}

// ideWriteFileAtomic replaces path with data through a temporary file in the
// same directory and a rename, so that a reader never sees half a file. It
// keeps the file's mode and, where it may, its owner (a file edited under
// sudo stays its owner's); a new file gets mode 0644 and the folders it
// needs, as when an agent proposes a file in a new package.
func ideWriteFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	fi, statErr := os.Stat(path)
	if statErr == nil {
		mode = fi.Mode().Perm()
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
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
	if statErr == nil {
		keepOwner(tmp, fi)
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
			return ideReport(s.Out, f.json, r, printCheck, r.Failed() == 0)
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
