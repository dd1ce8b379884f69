package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/term"
	"github.com/gemkit/gemkit/internal/toolrun"
)

func addExtensionRunCommands(parent *cobra.Command, a *app) {
	parent.AddCommand(newExtRunCmd(a))
	parent.AddCommand(newExtHookCmd(a))
}

// extRunFlags are the flags of `gemkit extensions run`.
type extRunFlags struct {
	consent, allowUnconfined, asJSON, raw bool
	timeout                               time.Duration
	maxOutput                             int64
	memory                                uint64
}

const extRunLong = `Run an extension's executable tool from the current folder (the workspace).

gemkit's own flags come before EXTENSION; everything after TOOL is the tool's
arguments: --name value (or --name=value), a boolean as --name alone, an array
argument by repeating its flag. The tool runs with exactly the access its
extension's permissions declare, enforced by the kernel (Landlock, namespaces,
seccomp and an allowlisting proxy on Linux).

Before an extension's tools first run you are shown its permissions and asked
to agree; the answer is remembered until the permissions change. Without a
terminal, pass --consent to agree, or the run is refused.

If this machine cannot enforce the permissions the run is refused;
--allow-unconfined runs it anyway, with a warning naming each missing
protection.

Exit status: 0 when the tool succeeded, 1 when it failed (non-zero exit,
timeout, too much output, invalid JSON), 2 when gemkit could not run it.`

func newExtRunCmd(a *app) *cobra.Command {
	var f extRunFlags
	cmd := &cobra.Command{
		Use:               "run [flags] EXTENSION TOOL [--ARG VALUE ...]",
		ValidArgsFunction: completeExtensionTool,
		Short:             "Run one of an extension's tools in the sandbox its permissions describe",
		Long:              extRunLong,
		Args:              argsUsage(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExtTool(cmd, a, &f, args)
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after EXTENSION TOOL are the tool's
	cmd.Flags().BoolVar(&f.consent, "consent", false, "agree to the extension's permissions without being asked (remembered until they change)")
	cmd.Flags().BoolVar(&f.allowUnconfined, "allow-unconfined", false, "run even if this machine cannot enforce the permissions (DANGEROUS: prints what is not enforced)")
	cmd.Flags().BoolVar(&f.raw, "raw", false, "write the tool's output as it is even to a terminal (by default control characters are shown escaped there)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the whole result (output, exit code, stderr, denials, enforcement) as JSON")
	cmd.Flags().DurationVar(&f.timeout, "timeout", toolrun.DefaultTimeout, "kill the tool and everything it started after this long")
	cmd.Flags().Int64Var(&f.maxOutput, "max-output", toolrun.DefaultMaxOutput, "stop the tool when it prints more than this many bytes")
	cmd.Flags().Uint64Var(&f.memory, "memory", sandbox.DefaultMemoryBytes, "bound the memory of the tool and everything it starts at this many bytes")
	return cmd
}

// runExtTool runs `gemkit extensions run EXTENSION TOOL ARGS...`.
func runExtTool(cmd *cobra.Command, a *app, f *extRunFlags, args []string) error {
	st, in, err := openRunnable(cmd, args[0])
	if err != nil {
		return err
	}
	ext := in.Extension
	if len(args) == 1 {
		return fmt.Errorf("name the tool to run: %s", toolList(ext.Manifest, in.Name))
	}
	tool := ext.Manifest.Tool(args[1])
	if tool == nil {
		return fmt.Errorf("extension %s has no tool %q: %s", in.Name, args[1], toolList(ext.Manifest, in.Name))
	}
	if slices.Contains(args[2:], "--help") || slices.Contains(args[2:], "-h") {
		printToolHelp(a.Out, in.Name, tool)
		return nil
	}
	toolArgs, err := toolrun.ParseCLIArgs(tool, args[2:])
	if err != nil {
		return err
	}
	settings, err := toolrun.InstalledSettings(in)
	if err != nil {
		return err
	}
	ask, grant := runAsker(a, f.consent)
	r := newRunner(st, stderrLauncher(a.Err, f.allowUnconfined), ask, nil)
	res, err := r.Run(cmd.Context(), toolrun.Call{
		Extension: ext, Tool: tool.Name, Args: toolArgs, Workspace: st.Workspace(),
		Timeout: f.timeout, MaxOutput: f.maxOutput, MemoryBytes: f.memory,
		Settings: settings, GrantConsent: grant,
	})
	stderrShown, werr := writeRunResult(a, f, res)
	if werr != nil {
		return werr
	}
	var te *toolrun.ToolError
	if errors.As(err, &te) {
		if stderrShown && te.Brief != "" {
			// Its stderr is just above: say the outcome once.
			return withExitCode(ExitNo, fmt.Errorf("tool %s %s", te.Tool, te.Brief))
		}
		return withExitCode(ExitNo, err)
	}
	return withRunHint(err)
}

// openRunnable opens the installed extension name, refusing one whose
// tools cannot run: unloadable, invalid or disabled here.
func openRunnable(cmd *cobra.Command, name string) (*extension.Store, *extension.Installed, error) {
	st, in, err := openInstalled(cmd, name)
	if err != nil {
		return nil, nil, err
	}
	if in.Extension == nil {
		return nil, nil, fmt.Errorf("extension %s cannot be loaded: %v", in.Name, in.Err)
	}
	var verr *extension.ValidationError
	if in.Err != nil && !errors.As(in.Err, &verr) {
		return nil, nil, fmt.Errorf("extension %s: %w", in.Name, in.Err)
	}
	if verr != nil {
		return nil, nil, fmt.Errorf("extension %s is invalid, fix it before running its tools (see `gemkit extensions validate`): %w", in.Name, verr)
	}
	if !st.IsEnabled(in.Name) {
		return nil, nil, fmt.Errorf("extension %s is disabled here; enable it with `gemkit extensions enable %s`", in.Name, in.Name)
	}
	return st, in, nil
}

// runAsker is how `extensions run` gets consent: on the terminal, where
// there is one; in an agent's shell, where a model may have written the
// command, --consent and y are the person's to give, by typing the
// name. grant is --consent as it counts.
func runAsker(a *app, consent bool) (ask toolrun.Asker, grant bool) {
	switch {
	case a.agentShell() != "" && (consent || isTerminal(a.In)):
		return func(ctx context.Context, q toolrun.ConsentRequest) (toolrun.Answer, error) {
			fmt.Fprint(a.Err, consentQuestion(q))
			ok, err := a.personConfirms(ctx, q.Extension, "")
			return toolrun.AllowIf(ok), err
		}, false
	case isTerminal(a.In):
		return terminalAsk(a), consent
	}
	return nil, consent
}

// writeRunResult writes what the tool printed (or, with --json, the whole
// result) and the warnings; stderrShown says the tool's stderr was.
func writeRunResult(a *app, f *extRunFlags, res *toolrun.Result) (stderrShown bool, err error) {
	if res == nil {
		return false, nil
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(a.Err, "\nWARNING: %s\n\n", w)
	}
	switch {
	case f.asJSON:
		if err := writeJSON(a.Out, res); err != nil {
			return false, err
		}
	case res.Output != nil:
		writeToolOutput(a.Out, append(res.Output, '\n'), f.raw)
	default:
		writeToolOutput(a.Out, res.Stdout, f.raw)
	}
	if !f.asJSON && res.Stderr != "" {
		writeToolOutput(a.Err, []byte(res.Stderr), f.raw)
		stderrShown = true
	}
	if res.DeniedDropped > 0 {
		fmt.Fprintf(a.Err, "gemkit: sandbox: %d more refused connections not shown\n", res.DeniedDropped)
	}
	return stderrShown, nil
}

// terminalAsk shows the permissions on stderr and reads y/N from the
// terminal.
func terminalAsk(a *app) toolrun.Asker {
	return func(ctx context.Context, q toolrun.ConsentRequest) (toolrun.Answer, error) {
		fmt.Fprint(a.Err, consentQuestion(q))
		fmt.Fprint(a.Err, "Allow? [y/N]: ")
		answer, err := term.ReadLine(ctx, a.In)
		if err != nil {
			return toolrun.Decline, err
		}
		return toolrun.AllowIf(isYes(answer)), nil
	}
}

// consentQuestion is what a terminal shows before an extension's tool
// runs without consent: the files changed since an earlier consent, if
// any, as a statement on a line of its own (it is no permission), then
// the permissions, one a line.
func consentQuestion(q toolrun.ConsentRequest) string {
	return q.Question("a tool", "\n", "  - ")
}

// withRunHint adds to a refused run the flag that would let it go ahead:
// the sandbox and the runner say why they refuse, the command says how to
// answer on its command line.
func withRunHint(err error) error {
	var ue *sandbox.UnenforceableError
	var ce *toolrun.ConsentError
	var he *sandbox.HomeWorkspaceError
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("%w; pass --allow-unconfined to run anyway with the listed protections missing", err)
	case errors.As(err, &he):
		return fmt.Errorf("%w (--workspace names it)", err)
	case errors.As(err, &ce) && !ce.Declined:
		return fmt.Errorf("%w; to agree, run %s (it shows what you agree to and runs nothing), or pass --consent", err, consentHint(ce.Extension))
	}
	return err
}

// toolList names an extension's tools and how to run one.
func toolList(m *extension.Manifest, name string) string {
	if len(m.Tools) == 0 {
		return "it has no tools"
	}
	sigs := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		sigs[i] = extension.ToolSignature(t)
	}
	return fmt.Sprintf("its tools are %s; run one with `gemkit extensions run %s TOOL --ARG VALUE`, or see them with `gemkit extensions run %s TOOL --help`",
		strings.Join(sigs, ", "), name, name)
}

// printToolHelp says how to call one tool from the command line.
func printToolHelp(w io.Writer, ext string, t *extension.Tool) {
	fmt.Fprintf(w, "%s\n", extension.Printable(extension.ToolSignature(*t)))
	if t.Description != "" {
		fmt.Fprintf(w, "  %s\n", extension.Printable(t.Description))
	}
	fmt.Fprintf(w, "\nUsage: gemkit extensions run %s %s", ext, t.Name)
	for _, a := range t.Args {
		v := " " + strings.ToUpper(string(a.Type))
		if a.Type == extension.ArgBoolean {
			v = ""
		}
		if a.Optional() {
			fmt.Fprintf(w, " [--%s%s]", a.Name, v)
		} else {
			fmt.Fprintf(w, " --%s%s", a.Name, v)
		}
	}
	fmt.Fprintln(w)
	for _, a := range t.Args {
		note := ""
		if len(a.Default) > 0 {
			note = " (default " + extension.Printable(string(a.Default)) + ")"
		} else if a.Type == extension.ArgStringArray {
			note = " (repeat the flag for each value)"
		}
		fmt.Fprintf(w, "  --%-14s %s%s\n", a.Name, extension.Printable(a.Description), note)
	}
}
