package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

func addExtensionRunCommands(parent *cobra.Command, a *app) {
	parent.AddCommand(newExtRunCmd(a))
}

func newExtRunCmd(a *app) *cobra.Command {
	var (
		consent, allowUnconfined, asJSON, raw bool
		timeout                               time.Duration
		maxOutput                             int64
		memory                                uint64
	)
	cmd := &cobra.Command{
		Use:               "run [flags] EXTENSION TOOL [--ARG VALUE ...]",
		ValidArgsFunction: completeExtensionTool,
		Short:             "Run one of an extension's tools in the sandbox its permissions describe",
		Long: `Run an extension's executable tool from the current folder (the workspace).

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
timeout, too much output, invalid JSON), 2 when gemkit could not run it.`,
		Args: argsUsage(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			if in.Extension == nil {
				return fmt.Errorf("extension %s cannot be loaded: %v", in.Name, in.Err)
			}
			var verr *extension.ValidationError
			if in.Err != nil && !errors.As(in.Err, &verr) {
				return fmt.Errorf("extension %s: %w", in.Name, in.Err)
			}
			if verr != nil {
				return fmt.Errorf("extension %s is invalid, fix it before running its tools (see `gemkit extensions validate`): %w", in.Name, verr)
			}
			if !st.IsEnabled(in.Name) {
				return fmt.Errorf("extension %s is disabled here; enable it with `gemkit extensions enable %s`", in.Name, in.Name)
			}
			ext := in.Extension
			if len(args) == 1 {
				return withExitCode(ExitError, fmt.Errorf("name the tool to run: %s", toolList(ext.Manifest, in.Name)))
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
			settings, err := readSettings(in)
			if err != nil {
				return err
			}
			r := &toolrun.Runner{
				Launcher: &sandbox.Launcher{
					AllowUnconfined: allowUnconfined,
					OnDeny: func(d sandbox.Denial) {
						fmt.Fprintf(a.Err, "gemkit: sandbox: %s\n", extension.Printable(d.String()))
					},
				},
				Consent:   st,
				Protected: []string{filepath.Dir(st.Dir())},
			}
			switch {
			case a.agentShell() != "" && (consent || isTerminal(a.In)):
				// A model may have written the command: --consent and y
				// are the person's to give, by typing the name.
				r.Ask = func(ctx context.Context, q toolrun.ConsentRequest) (bool, error) {
					fmt.Fprint(a.Err, consentQuestion(q))
					return a.personConfirms(ctx, q.Extension)
				}
				consent = false
			case isTerminal(a.In):
				r.Ask = terminalAsk(a)
			}
			stderrShown := false
			res, err := r.Run(cmd.Context(), toolrun.Call{
				Extension: ext, Tool: tool.Name, Args: toolArgs, Workspace: st.Workspace(),
				Timeout: timeout, MaxOutput: maxOutput, MemoryBytes: memory,
				Settings: settings, GrantConsent: consent,
			})
			if res != nil {
				for _, w := range res.Warnings {
					fmt.Fprintf(a.Err, "\nWARNING: %s\n\n", w)
				}
				if asJSON {
					if jerr := writeJSON(a.Out, res); jerr != nil {
						return jerr
					}
				} else {
					if res.Output != nil {
						writeToolOutput(a.Out, append(res.Output, '\n'), raw)
					} else {
						writeToolOutput(a.Out, res.Stdout, raw)
					}
					if res.Stderr != "" {
						writeToolOutput(a.Err, []byte(res.Stderr), raw)
						stderrShown = true
					}
				}
				if res.DeniedDropped > 0 {
					fmt.Fprintf(a.Err, "gemkit: sandbox: %d more refused connections not shown\n", res.DeniedDropped)
				}
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
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after EXTENSION TOOL are the tool's
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the extension's permissions without being asked (remembered until they change)")
	cmd.Flags().BoolVar(&allowUnconfined, "allow-unconfined", false, "run even if this machine cannot enforce the permissions (DANGEROUS: prints what is not enforced)")
	cmd.Flags().BoolVar(&raw, "raw", false, "write the tool's output as it is even to a terminal (by default control characters are shown escaped there)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole result (output, exit code, stderr, denials, enforcement) as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", toolrun.DefaultTimeout, "kill the tool and everything it started after this long")
	cmd.Flags().Int64Var(&maxOutput, "max-output", toolrun.DefaultMaxOutput, "stop the tool when it prints more than this many bytes")
	cmd.Flags().Uint64Var(&memory, "memory", sandbox.DefaultMemoryBytes, "bound the memory of the tool and everything it starts at this many bytes")
	return cmd
}

// readSettings reads the extension's settings file (.env in its entry in
// the extensions folder, else in its own folder for a linked one).
func readSettings(in *extension.Installed) (map[string]string, error) {
	return toolrun.ReadSettings(in.Extension.Dir, in.Entry)
}

// terminalAsk shows the permissions on stderr and reads y/N from the
// terminal.
func terminalAsk(a *app) toolrun.Asker {
	return func(ctx context.Context, q toolrun.ConsentRequest) (bool, error) {
		fmt.Fprint(a.Err, consentQuestion(q))
		fmt.Fprint(a.Err, "Allow? [y/N]: ")
		answer, err := readLine(ctx, a.In)
		if err != nil {
			return false, err
		}
		a := strings.ToLower(strings.TrimSpace(answer))
		return a == "y" || a == "yes", nil
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
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("%w; pass --allow-unconfined to run anyway with the listed protections missing", err)
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
