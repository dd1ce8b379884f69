package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extview"
	"github.com/gemkit/gemkit/internal/fsutil"
)

func newExtDescribeCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "describe <name>",
		ValidArgsFunction: completeExtension,
		Aliases:           []string{"show", "info"},
		Short:             "Show everything about an installed extension",
		Long: `Show an installed extension in full: its permissions (and how they are enforced
on this machine), tools with their arguments, docs, examples, MCP servers, context
files, settings, source, version and where it is enabled.`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			item, consent, err := extview.Describe(a.switcher(st), in, a.getenv)
			if err != nil {
				fmt.Fprintf(a.Err, "gemkit: %v\n", err)
			}
			var notes []extension.EnforcementNote
			var enfErr error
			if a.enforcer != nil && in.Extension != nil {
				notes, enfErr = a.enforcer.Enforcement(cmd.Context(), in.Extension)
			}
			if asJSON {
				if notes == nil {
					notes = []extension.EnforcementNote{}
				}
				dj := extview.Description{Item: item, Consent: consent, Manifest: in.Manifest(), Metadata: in.Metadata, Enforcement: notes}
				if in.Extension != nil {
					dj.Policies = extview.PoliciesOf(in.Extension.Policies())
				}
				if err := writeJSON(a.Out, dj); err != nil {
					return err
				}
				return errConflicts(item.Conflicts)
			}
			out := bufio.NewWriter(a.Out)
			writeDescription(printableWriter{out}, in, item, consent, a.enforcer != nil, notes, enfErr, extview.ModelTools(st, in))
			if err := out.Flush(); err != nil {
				return err
			}
			return errConflicts(item.Conflicts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the description as JSON")
	return cmd
}

// writeDescription renders `describe` for people: the entry, then each
// section of a readable extension.
func writeDescription(w io.Writer, in *extension.Installed, it extview.Item, consent extview.Consent, haveEnforcer bool, notes []extension.EnforcementNote, enfErr error, model map[string]string) {
	d := &describer{w: w, in: in, it: it, model: model}
	if !d.entry() {
		return
	}
	d.m = in.Extension.Manifest
	d.permissions(consent)
	d.enforcement(haveEnforcer, notes, enfErr)
	d.tools()
	d.docs()
	d.servers(consent)
	d.settings()
	d.skills()
	extview.WritePolicies(w, in.Extension.Policies())
	extview.WriteCodeParts(w, it.CodeParts)
	if it.ServerSandbox == nil {
		// The servers' section tells their refusals; the hooks' are
		// told here for an extension without servers.
		extview.WriteRefusals(w, extmcp.StillRefused(extmcp.RecentRefusals()[d.m.Name], extension.Widening{}, it.Choice.HookWidening, consent.Since))
	}
	d.rest()
}

// describer writes the sections of `describe` about one extension.
type describer struct {
	w     io.Writer
	in    *extension.Installed
	it    extview.Item
	m     *extension.Manifest
	model map[string]string
}

func (d *describer) section(title string) { fmt.Fprintf(d.w, "\n%s\n", title) }

// entry writes the name, where the extension is and comes from, and
// whether it is enabled; false when it cannot be read, and nothing
// follows.
func (d *describer) entry() bool {
	w, it := d.w, d.it
	fmt.Fprintln(w, strings.TrimSpace(it.Name+" "+it.Version))
	if it.Description != "" {
		fmt.Fprintf(w, "  %s\n", it.Description)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Path:     %s\n", it.Path)
	if it.Path != d.in.Entry {
		fmt.Fprintf(w, "Entry:    %s\n", d.in.Entry)
	}
	fmt.Fprintf(w, "Source:   %s\n", sourceLine(it.Source))
	if it.UpdateNote != "" {
		fmt.Fprintf(w, "Updates:  %s\n", it.UpdateNote)
	} else {
		fmt.Fprintf(w, "Updates:  gemkit or Gemini CLI\n")
	}
	fmt.Fprintf(w, "Enabled:  user %s, workspace %s\n", yesNo(it.Enabled.User), yesNo(it.Enabled.Workspace))
	if it.ID != "" {
		fmt.Fprintf(w, "ID:       %s\n", it.ID)
	}
	if len(it.Conflicts) > 0 {
		fmt.Fprintln(w)
		writeConflicts(w, it.Conflicts)
	}
	if it.Error != "" {
		fmt.Fprintf(w, "\nThis extension cannot be read: %s\n", it.Error)
		return false
	}
	return true
}

// sourceLine says where an extension was installed from.
func sourceLine(src *extview.SourceInfo) string {
	if src == nil {
		return "unknown (no " + extension.InstallMetadataFile + ")"
	}
	line := src.Type + " " + extension.RedactSource(src.Source)
	if src.Ref != "" {
		line += " (ref " + src.Ref + ")"
	}
	if src.Subdir != "" {
		line += " (folder " + src.Subdir + ")"
	}
	return line
}

func (d *describer) permissions(consent extview.Consent) {
	w, p := d.w, d.it.Permissions
	d.section("Permissions")
	for _, l := range p.Summary {
		fmt.Fprintf(w, "  - %s\n", l)
	}
	hosts := "[]"
	if len(p.AllowedHosts) > 0 {
		hosts = "[" + strings.Join(p.AllowedHosts, ", ") + "]"
	}
	fmt.Fprintf(w, "  declared: filesystem.read=%s filesystem.write=%s network.allowedHosts=%s\n", p.Read, p.Write, hosts)
	if len(p.ProtectedWrites) > 0 {
		fmt.Fprintf(w, "  declared: filesystem.protectedWrites=[%s]\n", extension.Printable(strings.Join(p.ProtectedWrites, ", ")))
	}
	if len(p.Credentials) > 0 {
		fmt.Fprintf(w, "  declared: filesystem.credentials=[%s]\n", extension.Printable(strings.Join(p.Credentials, ", ")))
	}
	if d.m.Permissions == nil {
		fmt.Fprintln(w, "  (no permissions block: the narrowest permissions apply)")
	}
	if !extension.ToolPermissionsShown(d.m) && len(extension.SandboxedServers(d.m)) > 0 {
		// The permissions above are its tools'; read alone, "no access
		// to your files" would seem to hold for its servers too.
		fmt.Fprintln(w, "  (these are its tools', and it has none: what its MCP servers can do in gemkit's sandbox is under MCP servers)")
	}
	switch {
	case consent.Granted && consent.FilesChanged:
		fmt.Fprintln(w, "  consent: granted for these permissions, not for the extension's files as they are now; asked again before a tool runs")
		if consent.Notice != "" {
			fmt.Fprintf(w, "  %s\n", consent.Notice)
		}
	case consent.Granted:
		fmt.Fprintln(w, "  consent: granted for these permissions and these files")
	default:
		fmt.Fprintln(w, "  consent: not granted yet; asked before a tool first runs")
	}
}

func (d *describer) enforcement(haveEnforcer bool, notes []extension.EnforcementNote, enfErr error) {
	w := d.w
	d.section("Enforcement on this machine")
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
}

func (d *describer) tools() {
	w, dir := d.w, d.in.Extension.Dir
	d.section(fmt.Sprintf("Tools (%d)", len(d.m.Tools)))
	if len(d.m.Tools) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, t := range d.m.Tools {
		out := t.Output
		if out == "" {
			out = extension.OutputString
		}
		fmt.Fprintf(w, "  %s → %s\n", extension.ToolSignature(t), out)
		if t.Description != "" {
			fmt.Fprintf(w, "      %s\n", t.Description)
		}
		fmt.Fprintf(w, "      runs: %s %s\n", t.Runtime, relPath(dir, t.Executable))
		if line, ok := d.model[t.Name]; ok {
			fmt.Fprintf(w, "      model tool: %s\n", line)
		}
		for _, a := range t.Args {
			fmt.Fprintf(w, "      --%s <%s>%s  %s\n", a.Name, a.Type, argNote(a), a.Description)
		}
	}
}

// argNote says of an argument that it is optional or has a default.
func argNote(a extension.Arg) string {
	var notes []string
	if a.Optional() {
		notes = append(notes, "optional")
	}
	if len(a.Default) > 0 {
		notes = append(notes, "default "+extension.Printable(string(a.Default)))
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

// docs writes the docs and the examples.
func (d *describer) docs() {
	w := d.w
	d.section(fmt.Sprintf("Docs (%d)", len(d.m.Docs)))
	if len(d.m.Docs) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, doc := range d.m.Docs {
		fmt.Fprintf(w, "  %s: %s\n", doc.Name, relPath(d.in.Extension.Dir, doc.File))
		if doc.Description != "" {
			fmt.Fprintf(w, "      %s\n", doc.Description)
		}
	}
	d.section(fmt.Sprintf("Examples (%d)", len(d.m.Examples)))
	if len(d.m.Examples) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, e := range d.m.Examples {
		fmt.Fprintf(w, "  %q\n      → %s\n", e.Prompt, e.ToolCall)
	}
}

// servers writes the MCP servers, the context files, the custom
// commands and the built-in tools the extension turns off.
func (d *describer) servers(consent extview.Consent) {
	w, m, ext := d.w, d.m, d.in.Extension
	d.section(fmt.Sprintf("MCP servers (%d)", len(m.MCPServers)))
	if len(m.MCPServers) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, name := range extview.SortedNames(m.MCPServers) {
		fmt.Fprintf(w, "  %s (%s)\n", name, extension.MCPServerSummary(m.MCPServers[name]))
		extview.WriteMCPDetails(w, m.MCPServers[name])
	}
	d.serversSandbox(consent)
	d.section("Context files")
	if names := m.ContextFiles(); len(ext.ContextFiles) == 0 && len(names) > 0 {
		fmt.Fprintf(w, "  none (looked for %s)\n", strings.Join(names, ", "))
	} else if len(ext.ContextFiles) == 0 {
		fmt.Fprintln(w, "  none (its contextFileName names no file)")
	}
	for _, f := range ext.ContextFiles {
		fmt.Fprintf(w, "  %s\n", relPath(ext.Dir, f))
	}
	if cmds := ext.CustomCommands(); len(cmds) > 0 {
		d.section("Custom commands")
		for _, c := range cmds {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	if len(m.ExcludeTools) > 0 {
		d.section("Excluded built-in tools")
		for _, t := range m.ExcludeTools {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
}

func (d *describer) settings() {
	if len(d.it.Settings) == 0 {
		return
	}
	w := d.w
	d.section("Settings")
	if ignored := d.in.IgnoredSettings(); len(ignored) > 0 {
		fmt.Fprintf(w, "  not read: %s in the linked folder's %s; Gemini CLI reads a linked extension's values in %s, and so does gemkit\n",
			strings.Join(ignored, ", "), filepath.Join(d.in.Extension.Dir, ".env"), filepath.Join(d.in.UserSettingsDir(), ".env"))
	}
	for _, st := range d.it.Settings {
		sens := ""
		if st.Sensitive {
			sens = ", sensitive"
		}
		fmt.Fprintf(w, "  %s ($%s%s): %s\n", st.Name, st.EnvVar, sens, st.Description)
		switch {
		case st.Set == nil:
			fmt.Fprintln(w, "      not in a .env file; Gemini CLI may hold it in the system keychain, which gemkit does not read")
		case *st.Set:
			fmt.Fprintf(w, "      set (%s scope, in %s)\n", st.Scope, st.Source)
			// A workspace's .env is Gemini CLI's alone (in trusted
			// folders): gemkit knows no trusted folders.
			switch {
			case st.Scope == "workspace" && !st.Passed:
				fmt.Fprintf(w, "      gemkit's tools and sandboxed servers get no value: they take the extension's own (%s), and a workspace's .env is Gemini CLI's alone (in trusted folders)\n", filepath.Join(d.in.UserSettingsDir(), ".env"))
			case st.Scope == "workspace":
				fmt.Fprintf(w, "      gemkit's tools and sandboxed servers get the extension's own value (%s), not the workspace's, which is Gemini CLI's alone (in trusted folders)\n", filepath.Join(d.in.UserSettingsDir(), ".env"))
			}
		default:
			fmt.Fprintf(w, "      not set; set it with `gemini extensions config %s %s`\n", d.m.Name, st.EnvVar)
		}
	}
}

// skills writes the agent skills, the agents and the hooks.
func (d *describer) skills() {
	w, it, dir := d.w, d.it, d.in.Extension.Dir
	if len(it.Skills) > 0 || len(it.SkippedSkills) > 0 {
		d.section(fmt.Sprintf("Agent skills (%d)", len(it.Skills)))
		for _, sk := range it.Skills {
			fmt.Fprintf(w, "  %s: %s\n      %s\n", sk.Name, sk.Description, relPath(dir, sk.Location))
			if line, ok := d.model[disclosure.SkillPrefix+sk.Name]; ok {
				fmt.Fprintf(w, "      model reads it with: %s\n", line)
			}
		}
		for _, sk := range it.SkippedSkills {
			fmt.Fprintf(w, "  not a skill: %s: %s (Gemini CLI skips it too)\n", relPath(dir, sk.Location), sk.Reason)
		}
	}
	if len(it.Agents) > 0 {
		d.section(fmt.Sprintf("Agents (%d)", len(it.Agents)))
		for _, a := range it.Agents {
			fmt.Fprintf(w, "  %s: %s\n      %s\n", a.Name, a.Description, relPath(dir, a.File))
		}
	}
	if len(it.Hooks) > 0 || it.HooksError != "" {
		d.section("Hooks (hooks/hooks.json)")
		extview.WriteHooks(w, it.Hooks, it.HooksError)
	}
}

// rest writes the themes, the plan, where the extension moved, the
// manifest's fields gemkit does not know and the problems found.
func (d *describer) rest() {
	w, m := d.w, d.m
	if len(m.Themes) > 0 {
		d.section("Themes")
		for _, raw := range m.Themes {
			var t struct {
				Name string `json:"name"`
			}
			json.Unmarshal(raw, &t)
			fmt.Fprintf(w, "  %s\n", t.Name)
		}
	}
	if len(m.Plan) > 0 {
		d.section("Plan")
		var buf bytes.Buffer
		if err := json.Compact(&buf, m.Plan); err == nil {
			fmt.Fprintf(w, "  %s\n", buf.String())
		}
	}
	if m.MigratedTo != "" {
		d.section("Migrated to")
		fmt.Fprintf(w, "  %s\n", m.MigratedTo)
	}
	if len(m.Extra) > 0 {
		d.section("Other manifest fields (kept as written)")
		keys := make([]string, 0, len(m.Extra))
		for k := range m.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "  %s\n", strings.Join(keys, ", "))
	}
	if len(d.it.Problems) > 0 {
		d.section(fmt.Sprintf("Problems (%d)", len(d.it.Problems)))
		for _, p := range d.it.Problems {
			fmt.Fprintf(w, "  %s\n    %s\n", p.String(), p.Effect.Words())
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// relPath shows p relative to the extension folder when it is inside it.
func relPath(dir, p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	if r, ok := fsutil.Rel(dir, p); ok {
		return filepath.ToSlash(r)
	}
	return p
}
