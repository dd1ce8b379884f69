package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gemkit/gemkit/internal/extension"
)

// addExtensionManageCommands adds the manager: install, uninstall, list,
// describe, enable, disable, update, link, new and validate. The --home and
// --workspace flags are persistent on parent so the tool-running commands
// see the same store.
func addExtensionManageCommands(parent *cobra.Command, s Streams) {
	parent.PersistentFlags().String("home", "", "home folder that holds .gemini (default $"+extension.HomeEnv+" or your home directory)")
	parent.PersistentFlags().String("workspace", "", "workspace folder for ${workspacePath} and the workspace scope (default the current directory)")
	parent.AddCommand(
		newExtInstallCmd(s),
		newExtUninstallCmd(s),
		newExtListCmd(s),
		newExtDescribeCmd(s, newEnforcer(s)),
		newExtEnableCmd(s, true),
		newExtEnableCmd(s, false),
		newExtUpdateCmd(s),
		newExtLinkCmd(s),
		newExtNewCmd(s),
		newExtValidateCmd(s),
	)
}

// openStore opens the extension store the --home and --workspace flags
// name; the tool-running commands use it too.
func openStore(cmd *cobra.Command) (*extension.Store, error) {
	home, _ := cmd.Flags().GetString("home")
	if home == "" {
		var err error
		if home, err = extension.DefaultHome(); err != nil {
			return nil, err
		}
	}
	st := extension.OpenStore(home)
	if ws, _ := cmd.Flags().GetString("workspace"); ws != "" {
		fi, err := os.Stat(ws)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--workspace %s is not a folder", ws)
		}
		st = st.WithWorkspace(ws)
	}
	return st, nil
}

// openInstalled opens the store as openStore does and finds the installed
// extension name in it, for the commands that act on one extension.
func openInstalled(cmd *cobra.Command, name string) (*extension.Store, *extension.Installed, error) {
	st, err := openStore(cmd)
	if err != nil {
		return nil, nil, err
	}
	in, err := st.Get(name)
	if err != nil {
		return nil, nil, err
	}
	return st, in, nil
}

// isTerminal reports whether r is a terminal a person can answer on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// errNeedsConsent is the refusal when nobody can be asked. The consent
// text has been printed just before it, so the person can read what they
// would agree to before running the command again with --consent.
func errNeedsConsent(what string) error {
	return withExitCode(ExitError, fmt.Errorf("%s needs your consent, and there is no terminal to ask on (stdin is not a terminal); "+
		"nothing was changed. Read what it will be able to do above, then run it in a terminal, or again with --consent to agree", what))
}

// consentFunc asks on the terminal, or agrees when --consent was given.
// Either way the consent text goes to stderr, so what was agreed to is on
// record.
func consentFunc(s Streams, given bool) extension.ConsentFunc {
	return func(ctx context.Context, p extension.ConsentPrompt) (bool, error) {
		for _, l := range p.Lines {
			fmt.Fprintln(s.Err, extension.Printable(l))
		}
		if given {
			fmt.Fprintln(s.Err, "Consent given with --consent.")
			return true, nil
		}
		if !isTerminal(s.In) {
			return false, errNeedsConsent(strings.ToLower(p.Action) + " " + extension.Printable(p.Extension.Manifest.Name))
		}
		fmt.Fprint(s.Err, "\nDo you want to continue? [y/N]: ")
		answer, err := readLine(ctx, s.In)
		if err != nil {
			return false, err
		}
		a := strings.ToLower(strings.TrimSpace(answer))
		return a == "y" || a == "yes", nil
	}
}

// readLine reads one line from r, giving up when ctx ends.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if errors.Is(err, io.EOF) {
			err = nil
		}
		ch <- result{line, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case res := <-ch:
		return res.line, res.err
	}
}

// argsUsage accepts min to max arguments (max < 0: any number) and
// otherwise answers with the command's usage line, which says what the
// arguments are, where cobra would only count them.
func argsUsage(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return fmt.Errorf("usage: %s (see `%s --help`)", strings.TrimSuffix(cmd.UseLine(), " [flags]"), cmd.CommandPath())
		}
		return nil
	}
}

// printableWriter passes text through extension.PrintableText, so that
// what a manifest says cannot reach the terminal as escape sequences.
// JSON output needs no such care: encoding/json escapes control
// characters itself.
type printableWriter struct{ w io.Writer }

func (p printableWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, extension.PrintableText(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func newExtInstallCmd(s Streams) *cobra.Command {
	var ref, subdir string
	var consent, asJSON bool
	cmd := &cobra.Command{
		Use:   "install <git-url|local-folder>",
		Short: "Install an extension from a git repository or a local folder",
		Long: `Install an extension into ~/.gemini/extensions/<name>/, where Gemini CLI finds it too.

A git source is cloned with your own git (https, ssh, git@host:path and file URLs),
at --ref (a branch, tag or commit) when given. --path names the folder inside the
source that holds gemini-extension.json. The manifest must be valid. You are shown
what the extension will be able to do and asked to agree, unless --consent is given;
without a terminal and without --consent the install is refused after showing it.
A failed install leaves nothing behind.`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			interactive := isTerminal(s.In)
			in, err := st.Install(cmd.Context(), extension.InstallRequest{
				Source: args[0], Ref: ref, Subdir: subdir,
				Consent: consentFunc(s, consent), Progress: s.Err, Interactive: interactive,
			})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(s.Out, listEntry(st, in, nil))
			}
			m := in.Manifest()
			fmt.Fprintf(printableWriter{s.Out}, "Installed %s %s in %s\n", m.Name, m.Version, in.Entry)
			return nil
		},
	}
	cmd.Flags().StringVar(&ref, "ref", "", "git branch, tag or commit to install")
	cmd.Flags().StringVar(&subdir, "path", "", "folder inside the source that holds gemini-extension.json")
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the extension's permissions without being asked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the installed extension as JSON")
	return cmd
}

func newExtLinkCmd(s Streams) *cobra.Command {
	var consent bool
	cmd := &cobra.Command{
		Use:   "link <folder>",
		Short: "Link a development folder as an installed extension (no copy)",
		Long: `Link a folder you are working on as an installed extension, as Gemini CLI's
"extensions link" does: ~/.gemini/extensions/<name>/ then holds only install
metadata pointing at the folder's real path (symlinks resolved), so your edits take
effect at once and ${extensionPath} is the real path. Consent as for install.`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			in, err := st.Link(cmd.Context(), args[0], consentFunc(s, consent))
			if err != nil {
				return err
			}
			fmt.Fprintf(printableWriter{s.Out}, "Linked %s %s → %s\n", in.Manifest().Name, in.Manifest().Version, in.Extension.Dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the extension's permissions without being asked")
	return cmd
}

func newExtUninstallCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:     "uninstall <name>...",
		Aliases: []string{"remove", "rm"},
		Short:   "Uninstall extensions",
		Args:    argsUsage(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			var failed []string
			for _, name := range args {
				if err := st.Uninstall(name); err != nil {
					fmt.Fprintf(s.Err, "gemkit: %v\n", err)
					failed = append(failed, name)
					continue
				}
				fmt.Fprintf(s.Out, "Uninstalled %s\n", name)
			}
			if len(failed) > 0 {
				return withExitCode(ExitError, fmt.Errorf("could not uninstall %s", strings.Join(failed, ", ")))
			}
			return nil
		},
	}
}

func newExtEnableCmd(s Streams, enable bool) *cobra.Command {
	verb := "enable"
	if !enable {
		verb = "disable"
	}
	var scope string
	cmd := &cobra.Command{
		Use:   verb + " <name>",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " an extension for the user or in this workspace",
		Long: fmt.Sprintf(`%s an extension. --scope user applies to your home folder and everything
under it; --scope workspace applies to the workspace folder and below, and
overrides the user choice there. The rules live in Gemini CLI's
~/.gemini/extensions/extension-enablement.json, so Gemini CLI follows them too.`, strings.ToUpper(verb[:1])+verb[1:]),
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := extension.ParseScope(scope)
			if err != nil {
				return err
			}
			// The rules are kept under the manifest's name, which the
			// argument may match only case-insensitively.
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			name := in.Name
			if m := in.Manifest(); m != nil {
				name = m.Name
			}
			if enable {
				err = st.Enable(name, sc)
			} else {
				err = st.Disable(name, sc)
			}
			if err != nil {
				return err
			}
			e, err := st.Enablement(name)
			if err != nil {
				return err
			}
			where := "for the user"
			if sc == extension.ScopeWorkspace {
				where = "in " + st.Workspace()
			}
			fmt.Fprintf(s.Out, "%sd %s %s (now: user %s, workspace %s)\n", strings.ToUpper(verb[:1])+verb[1:], name, where, yesNo(e.User), yesNo(e.Workspace))
			if sc == extension.ScopeUser && !under(st.Workspace(), st.Home()) {
				fmt.Fprintf(s.Err, "Note: the user scope covers %s and the folders under it, as in Gemini CLI; the workspace %s is outside it, so use --scope workspace there.\n", st.Home(), st.Workspace())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scope, "scope", string(extension.ScopeUser), "user or workspace")
	return cmd
}

// under reports whether dir is base or inside it.
func under(dir, base string) bool {
	r, err := filepath.Rel(base, dir)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

func yesNo(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func newExtUpdateCmd(s Streams) *cobra.Command {
	var all, consent, asJSON bool
	cmd := &cobra.Command{
		Use:   "update <name>... | --all",
		Short: "Update extensions from the source they were installed from",
		Long: `Fetch each extension again from its source (git URL and ref, or local folder)
and replace it when something changed, showing the version change. Consent is
asked again only when its permissions, tools or MCP servers changed, and the
prompt shows what changed; --consent agrees without asking.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return withExitCode(ExitError, errors.New("name the extensions to update, or pass --all"))
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			names := args
			if all {
				list, err := st.List()
				if err != nil {
					return err
				}
				for _, in := range list {
					names = append(names, in.Name)
				}
			}
			interactive := isTerminal(s.In)
			var results []*extension.UpdateResult
			var failed []string
			for _, name := range names {
				res, err := st.Update(cmd.Context(), name, extension.UpdateRequest{
					Consent: consentFunc(s, consent), Progress: s.Err, Interactive: interactive,
				})
				if err != nil {
					var ee *exitError
					if errors.As(err, &ee) && ee.err != nil {
						// The refusal for want of consent names the
						// update itself.
						fmt.Fprintf(s.Err, "gemkit: %v\n", ee.err)
					} else {
						fmt.Fprintf(s.Err, "gemkit: update %s: %v\n", name, err)
					}
					failed = append(failed, name)
					continue
				}
				results = append(results, res)
				if !asJSON {
					fmt.Fprintln(s.Out, extension.Printable(updateLine(res)))
				}
			}
			if asJSON {
				if results == nil {
					results = []*extension.UpdateResult{}
				}
				if err := writeJSON(s.Out, results); err != nil {
					return err
				}
			}
			if len(failed) > 0 {
				return withExitCode(ExitError, fmt.Errorf("could not update %s", strings.Join(failed, ", ")))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "update every installed extension")
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to changed permissions, tools or MCP servers without being asked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func updateLine(r *extension.UpdateResult) string {
	switch {
	case r.Linked:
		return fmt.Sprintf("%s %s is linked to its folder and always current", r.Name, r.OldVersion)
	case r.UpToDate:
		return fmt.Sprintf("%s %s is up to date", r.Name, r.OldVersion)
	case r.OldVersion == r.NewVersion:
		return fmt.Sprintf("Updated %s %s (same version, new content)", r.Name, r.NewVersion)
	}
	return fmt.Sprintf("Updated %s %s → %s", r.Name, r.OldVersion, r.NewVersion)
}

func newExtNewCmd(s Streams) *cobra.Command {
	var names []string
	for _, t := range extension.Templates() {
		names = append(names, t.Name)
	}
	cmd := &cobra.Command{
		Use:       "new <folder> [template]",
		Short:     "Create a new extension from a template",
		ValidArgs: names,
		Long: func() string {
			var b strings.Builder
			b.WriteString("Create a new extension in <folder>, named after the folder. Templates:\n\n")
			for _, t := range extension.Templates() {
				fmt.Fprintf(&b, "  %-9s %s\n", t.Name, t.Description)
			}
			b.WriteString("\nThe default is " + extension.DefaultTemplate + ". Every template passes `gemkit extensions validate`.")
			return b.String()
		}(),
		Args: argsUsage(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tmpl := ""
			if len(args) == 2 {
				tmpl = args[1]
			}
			files, err := extension.CreateFromTemplate(args[0], tmpl)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "Created %s:\n", args[0])
			for _, f := range files {
				fmt.Fprintf(s.Out, "  %s\n", f)
			}
			fmt.Fprintf(s.Out, "Check it with `gemkit extensions validate %s`; try it with `gemkit extensions link %s`.\n", args[0], args[0])
			return nil
		},
	}
	return cmd
}

func newExtValidateCmd(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate <folder>",
		Short: "Check an extension folder and list every problem with its fix",
		Args:  argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, _ := cmd.Flags().GetString("workspace")
			ext, err := extension.LoadWith(args[0], extension.LoadOptions{WorkspacePath: ws})
			var ve *extension.ValidationError
			if err != nil && !errors.As(err, &ve) {
				if asJSON {
					writeJSON(s.Out, map[string]any{"valid": false, "error": err.Error(), "problems": []extension.Problem{}})
				}
				return withExitCode(ExitError, err)
			}
			probs := []extension.Problem{}
			if ve != nil {
				probs = ve.Problems
			}
			if asJSON {
				if err := writeJSON(s.Out, map[string]any{"valid": len(probs) == 0, "name": ext.Manifest.Name, "manifest": ext.ManifestPath(), "problems": probs}); err != nil {
					return err
				}
			} else if out := (printableWriter{s.Out}); len(probs) == 0 {
				fmt.Fprintf(out, "%s is valid: %s %s\n", ext.ManifestPath(), ext.Manifest.Name, ext.Manifest.Version)
			} else {
				fmt.Fprintf(out, "%s has %d problem(s):\n", ext.ManifestPath(), len(probs))
				for _, p := range probs {
					where := p.Path
					if where == "" {
						where = "(manifest)"
					}
					fmt.Fprintf(out, "  %s: %s\n      fix: %s\n", where, p.Message, p.Fix)
				}
			}
			if len(probs) > 0 {
				return withExitCode(ExitNo, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// listItem is one extension in `list --json` (and `install --json`).
type listItem struct {
	Name         string               `json:"name"`
	Version      string               `json:"version,omitempty"`
	Description  string               `json:"description,omitempty"`
	Path         string               `json:"path"`
	Entry        string               `json:"entry"`
	Source       *sourceInfo          `json:"source,omitempty"`
	Enabled      extension.Enablement `json:"enabled"`
	Tools        []string             `json:"tools"`
	Docs         []string             `json:"docs"`
	MCPServers   []string             `json:"mcpServers"`
	ContextFiles []string             `json:"contextFiles"`
	Permissions  *permissionsInfo     `json:"permissions,omitempty"`
	Problems     []extension.Problem  `json:"problems,omitempty"`
	Error        string               `json:"error,omitempty"`
}

type sourceInfo struct {
	Type   string `json:"type"`
	Source string `json:"source"`
	Ref    string `json:"ref,omitempty"`
	Subdir string `json:"subdir,omitempty"`
}

type permissionsInfo struct {
	Read         extension.Access `json:"read"`
	Write        extension.Access `json:"write"`
	AllowedHosts []string         `json:"allowedHosts"`
	Summary      []string         `json:"summary"`
	Hash         string           `json:"hash"`
}

func permissionsOf(m *extension.Manifest) *permissionsInfo {
	p := m.EffectivePermissions()
	return &permissionsInfo{Read: p.Filesystem.Read, Write: p.Filesystem.Write, AllowedHosts: p.Network.AllowedHosts,
		Summary: extension.PermissionsSummary(m), Hash: extension.PermissionsHash(m)}
}

func sourceOf(in *extension.Installed) *sourceInfo {
	if in.Metadata == nil {
		return nil
	}
	return &sourceInfo{Type: in.Metadata.Type, Source: in.Metadata.Source, Ref: in.Metadata.Ref, Subdir: in.Metadata.Subdir}
}

// listEntry summarises one installed extension; en is its enablement when
// the caller has it already.
func listEntry(st *extension.Store, in *extension.Installed, en *extension.Enablement) listItem {
	it := listItem{Name: in.Name, Path: in.Entry, Entry: in.Entry, Source: sourceOf(in),
		Tools: []string{}, Docs: []string{}, MCPServers: []string{}, ContextFiles: []string{}}
	var ve *extension.ValidationError
	if in.Err != nil && !errors.As(in.Err, &ve) {
		it.Error = in.Err.Error()
	}
	if ve != nil {
		it.Problems = ve.Problems
	}
	name := in.Name
	if in.Extension != nil {
		m := in.Extension.Manifest
		name = m.Name
		it.Name, it.Version, it.Description, it.Path = m.Name, m.Version, m.Description, in.Extension.Dir
		for _, t := range m.Tools {
			it.Tools = append(it.Tools, t.Name)
		}
		for _, d := range m.Docs {
			it.Docs = append(it.Docs, d.Name)
		}
		it.MCPServers = sortedNames(m.MCPServers)
		it.ContextFiles = append(it.ContextFiles, in.Extension.ContextFiles...)
		it.Permissions = permissionsOf(m)
	}
	if en != nil {
		it.Enabled = *en
	} else {
		it.Enabled, _ = st.Enablement(name)
	}
	return it
}

func sortedNames(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newExtListCmd(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List installed extensions",
		Args:    argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Loading every manifest allocates a few MB (about 13 KB
			// per extension) that all stay live until the list is
			// printed, so the collector's work at the default
			// GOGC=100 is wasted: the process exits right after. A
			// larger target skips it (a fifth of the command's time
			// with 200 extensions) and still bounds the heap at 5x
			// what is live. (Restored after, for callers of Run that
			// go on, such as tests.)
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			all, err := st.List()
			if err != nil {
				return err
			}
			enabled, err := st.Enablements()
			if err != nil {
				fmt.Fprintf(s.Err, "gemkit: %v\n", err)
			}
			items := make([]listItem, 0, len(all))
			for _, in := range all {
				name := in.Name
				if m := in.Manifest(); m != nil {
					name = m.Name
				}
				en := enabled(name)
				items = append(items, listEntry(st, in, &en))
			}
			// One write at the end: tabwriter writes each cell on its
			// own, a system call each on an unbuffered stdout.
			out := bufio.NewWriter(s.Out)
			defer out.Flush()
			if asJSON {
				return writeJSON(out, items)
			}
			if len(items) == 0 {
				fmt.Fprintf(out, "No extensions installed in %s.\n", st.Dir())
				return nil
			}
			tw := tabwriter.NewWriter(printableWriter{out}, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tENABLED\tTOOLS\tMCP\tSOURCE")
			var broken []listItem
			for _, it := range items {
				src := "-"
				if it.Source != nil {
					src = it.Source.Type + " " + extension.RedactSource(it.Source.Source)
					if it.Source.Ref != "" {
						src += "@" + it.Source.Ref
					}
					if it.Source.Subdir != "" {
						src += " (" + it.Source.Subdir + ")"
					}
				}
				version := it.Version
				if version == "" {
					version = "?"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", it.Name, version, enabledWord(it.Enabled), len(it.Tools), len(it.MCPServers), src)
				if it.Error != "" || len(it.Problems) > 0 {
					broken = append(broken, it)
				}
			}
			tw.Flush()
			for _, it := range broken {
				if it.Error != "" {
					fmt.Fprintf(printableWriter{out}, "! %s cannot be read: %s\n", it.Name, firstLine(it.Error))
				} else {
					fmt.Fprintf(printableWriter{out}, "! %s has %d manifest problem(s); see `gemkit extensions validate %s`\n", it.Name, len(it.Problems), it.Path)
				}
			}
			return out.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// enabledWord says whether the extension runs in the workspace, noting
// when the user-level choice differs.
func enabledWord(e extension.Enablement) string {
	switch {
	case e.Workspace && e.User:
		return "yes"
	case e.Workspace:
		return "yes (workspace)"
	case e.User:
		return "no (workspace)"
	}
	return "no"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// describeJSON is `describe --json`.
type describeJSON struct {
	listItem
	Consent     consentInfo                 `json:"consent"`
	Manifest    *extension.Manifest         `json:"manifest,omitempty"`
	Metadata    *extension.InstallMetadata  `json:"installMetadata,omitempty"`
	Enforcement []extension.EnforcementNote `json:"enforcement"`
}

type consentInfo struct {
	Granted bool `json:"granted"`
}

func newExtDescribeCmd(s Streams, enforcer extension.Enforcer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "describe <name>",
		Aliases: []string{"show", "info"},
		Short:   "Show everything about an installed extension",
		Long: `Show an installed extension in full: its permissions (and how they are enforced
on this machine), tools with their arguments, docs, examples, MCP servers, context
files, settings, source, version and where it is enabled.`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			item := listEntry(st, in, nil)
			var notes []extension.EnforcementNote
			var enfErr error
			if enforcer != nil && in.Extension != nil {
				notes, enfErr = enforcer.Enforcement(cmd.Context(), in.Extension)
			}
			consent := consentInfo{}
			if m := in.Manifest(); m != nil {
				consent.Granted = st.ConsentGranted(m.Name, extension.PermissionsHash(m))
			}
			if asJSON {
				if notes == nil {
					notes = []extension.EnforcementNote{}
				}
				return writeJSON(s.Out, describeJSON{listItem: item, Consent: consent, Manifest: in.Manifest(), Metadata: in.Metadata, Enforcement: notes})
			}
			out := bufio.NewWriter(s.Out)
			writeDescription(printableWriter{out}, in, item, consent, enforcer != nil, notes, enfErr)
			return out.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the description as JSON")
	return cmd
}

// writeDescription renders `describe` for people.
func writeDescription(w io.Writer, in *extension.Installed, it listItem, consent consentInfo, haveEnforcer bool, notes []extension.EnforcementNote, enfErr error) {
	section := func(title string) { fmt.Fprintf(w, "\n%s\n", title) }
	fmt.Fprintln(w, strings.TrimSpace(it.Name+" "+it.Version))
	if it.Description != "" {
		fmt.Fprintf(w, "  %s\n", it.Description)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Path:     %s\n", it.Path)
	if it.Path != in.Entry {
		fmt.Fprintf(w, "Entry:    %s\n", in.Entry)
	}
	if src := it.Source; src != nil {
		line := src.Type + " " + extension.RedactSource(src.Source)
		if src.Ref != "" {
			line += " (ref " + src.Ref + ")"
		}
		if src.Subdir != "" {
			line += " (folder " + src.Subdir + ")"
		}
		fmt.Fprintf(w, "Source:   %s\n", line)
	} else {
		fmt.Fprintf(w, "Source:   unknown (no %s)\n", extension.InstallMetadataFile)
	}
	fmt.Fprintf(w, "Enabled:  user %s, workspace %s\n", yesNo(it.Enabled.User), yesNo(it.Enabled.Workspace))
	if it.Error != "" {
		fmt.Fprintf(w, "\nThis extension cannot be read: %s\n", it.Error)
		return
	}
	m := in.Extension.Manifest

	section("Permissions")
	for _, l := range it.Permissions.Summary {
		fmt.Fprintf(w, "  - %s\n", l)
	}
	hosts := "[]"
	if len(it.Permissions.AllowedHosts) > 0 {
		hosts = "[" + strings.Join(it.Permissions.AllowedHosts, ", ") + "]"
	}
	fmt.Fprintf(w, "  declared: filesystem.read=%s filesystem.write=%s network.allowedHosts=%s\n", it.Permissions.Read, it.Permissions.Write, hosts)
	if m.Permissions == nil {
		fmt.Fprintln(w, "  (no permissions block: the narrowest permissions apply)")
	}
	if consent.Granted {
		fmt.Fprintln(w, "  consent: granted for these permissions")
	} else {
		fmt.Fprintln(w, "  consent: not granted yet; asked before a tool first runs")
	}

	section("Enforcement on this machine")
	switch {
	case !haveEnforcer:
		fmt.Fprintln(w, "  not reported: this build has no sandbox for extension tools")
	case enfErr != nil:
		fmt.Fprintf(w, "  could not be determined: %v\n", enfErr)
	case len(notes) == 0:
		fmt.Fprintln(w, "  nothing to enforce")
	default:
		for _, n := range notes {
			mark := "enforced"
			if !n.Enforced {
				mark = "NOT enforced"
			}
			fmt.Fprintf(w, "  - %s: %s (%s)\n", n.Permission, n.How, mark)
		}
	}

	section(fmt.Sprintf("Tools (%d)", len(m.Tools)))
	if len(m.Tools) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, t := range m.Tools {
		out := t.Output
		if out == "" {
			out = extension.OutputString
		}
		fmt.Fprintf(w, "  %s → %s\n", extension.ToolSignature(t), out)
		if t.Description != "" {
			fmt.Fprintf(w, "      %s\n", t.Description)
		}
		fmt.Fprintf(w, "      runs: %s %s\n", t.Runtime, relPath(in.Extension.Dir, t.Executable))
		for _, a := range t.Args {
			fmt.Fprintf(w, "      --%s <%s>  %s\n", a.Name, a.Type, a.Description)
		}
	}

	section(fmt.Sprintf("Docs (%d)", len(m.Docs)))
	if len(m.Docs) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, d := range m.Docs {
		fmt.Fprintf(w, "  %s: %s\n", d.Name, relPath(in.Extension.Dir, d.File))
		if d.Description != "" {
			fmt.Fprintf(w, "      %s\n", d.Description)
		}
	}

	section(fmt.Sprintf("Examples (%d)", len(m.Examples)))
	if len(m.Examples) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, e := range m.Examples {
		fmt.Fprintf(w, "  %q\n      → %s\n", e.Prompt, e.ToolCall)
	}

	section(fmt.Sprintf("MCP servers (%d)", len(m.MCPServers)))
	if len(m.MCPServers) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, name := range sortedNames(m.MCPServers) {
		fmt.Fprintf(w, "  %s (%s)\n", name, extension.MCPServerSummary(m.MCPServers[name]))
		writeMCPDetails(w, m.MCPServers[name])
	}

	section("Context files")
	if len(in.Extension.ContextFiles) == 0 {
		fmt.Fprintf(w, "  none (looked for %s)\n", strings.Join(m.ContextFiles(), ", "))
	}
	for _, f := range in.Extension.ContextFiles {
		fmt.Fprintf(w, "  %s\n", relPath(in.Extension.Dir, f))
	}

	if cmds := in.Extension.CustomCommands(); len(cmds) > 0 {
		section("Custom commands")
		for _, c := range cmds {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	if len(m.ExcludeTools) > 0 {
		section("Excluded built-in tools")
		for _, t := range m.ExcludeTools {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
	if len(m.Settings) > 0 {
		section("Settings")
		for _, st := range m.Settings {
			sens := ""
			if st.Sensitive {
				sens = ", sensitive"
			}
			fmt.Fprintf(w, "  %s ($%s%s): %s\n", st.Name, st.EnvVar, sens, st.Description)
		}
	}
	if len(m.Themes) > 0 {
		section("Themes")
		for _, raw := range m.Themes {
			var t struct {
				Name string `json:"name"`
			}
			json.Unmarshal(raw, &t)
			fmt.Fprintf(w, "  %s\n", t.Name)
		}
	}
	if len(m.Plan) > 0 {
		section("Plan")
		var buf bytes.Buffer
		if err := json.Compact(&buf, m.Plan); err == nil {
			fmt.Fprintf(w, "  %s\n", buf.String())
		}
	}
	if m.MigratedTo != "" {
		section("Migrated to")
		fmt.Fprintf(w, "  %s\n", m.MigratedTo)
	}
	if len(m.Extra) > 0 {
		section("Other manifest fields (kept as written)")
		keys := make([]string, 0, len(m.Extra))
		for k := range m.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "  %s\n", strings.Join(keys, ", "))
	}
	if len(it.Problems) > 0 {
		section(fmt.Sprintf("Problems (%d)", len(it.Problems)))
		for _, p := range it.Problems {
			fmt.Fprintf(w, "  %s\n", p.String())
		}
	}
}

// writeMCPDetails prints the parts of an MCP server definition that its
// summary line leaves out: the working folder, the names (not the values,
// which may be secrets) of its environment variables and headers, and any
// other setting as written.
func writeMCPDetails(w io.Writer, raw json.RawMessage) {
	var def map[string]json.RawMessage
	if json.Unmarshal(raw, &def) != nil {
		return
	}
	for _, k := range sortedNames(def) {
		switch k {
		case "command", "args", "url", "httpUrl", "tcp":
			continue
		case "env", "headers":
			var m map[string]json.RawMessage
			if json.Unmarshal(def[k], &m) == nil {
				fmt.Fprintf(w, "      %s: %s\n", k, strings.Join(sortedNames(m), ", "))
				continue
			}
		case "cwd":
			var s string
			if json.Unmarshal(def[k], &s) == nil {
				fmt.Fprintf(w, "      cwd: %s\n", s)
				continue
			}
		}
		var buf bytes.Buffer
		if json.Compact(&buf, def[k]) == nil {
			fmt.Fprintf(w, "      %s: %s\n", k, buf.String())
		}
	}
}

// relPath shows p relative to the extension folder when it is inside it.
func relPath(dir, p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}
