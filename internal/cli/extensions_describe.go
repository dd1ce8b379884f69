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
	"github.com/gemkit/gemkit/internal/fsutil"
)

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
	// FilesChanged: consent was given for these permissions, but the
	// extension's files are not the ones agreed to (or the record
	// predates binding to them); the next run asks again.
	FilesChanged bool `json:"filesChanged,omitempty"`
	// notice names the files that changed (extension.ContentNotice).
	notice string
}

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
			item := listEntry(st, in, nil)
			if cs, err := st.ConflictsWith(in.Entry); err == nil {
				item.Conflicts = cs
			}
			var notes []extension.EnforcementNote
			var enfErr error
			if a.enforcer != nil && in.Extension != nil {
				notes, enfErr = a.enforcer.Enforcement(cmd.Context(), in.Extension)
			}
			consent := consentInfo{}
			if m := in.Manifest(); m != nil {
				agreed, granted := st.ConsentContent(m.Name, extension.PermissionsHash(m))
				consent.Granted = granted
				if granted && in.Extension != nil {
					now, err := extension.ReadContent(in.Extension.Dir)
					consent.FilesChanged = err != nil || now.Digest != agreed.Digest
					if err == nil {
						consent.notice = extension.ContentNotice(agreed, now, in.Extension.Dir)
					}
				}
			}
			if asJSON {
				if notes == nil {
					notes = []extension.EnforcementNote{}
				}
				if err := writeJSON(a.Out, describeJSON{listItem: item, Consent: consent, Manifest: in.Manifest(), Metadata: in.Metadata, Enforcement: notes}); err != nil {
					return err
				}
				return errConflicts(item.Conflicts)
			}
			out := bufio.NewWriter(a.Out)
			writeDescription(printableWriter{out}, in, item, consent, a.enforcer != nil, notes, enfErr, modelTools(st, in))
			if err := out.Flush(); err != nil {
				return err
			}
			return errConflicts(item.Conflicts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the description as JSON")
	return cmd
}

// writeDescription renders `describe` for people.
func writeDescription(w io.Writer, in *extension.Installed, it listItem, consent consentInfo, haveEnforcer bool, notes []extension.EnforcementNote, enfErr error, model map[string]string) {
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
	if len(it.Permissions.ProtectedWrites) > 0 {
		fmt.Fprintf(w, "  declared: filesystem.protectedWrites=[%s]\n", extension.Printable(strings.Join(it.Permissions.ProtectedWrites, ", ")))
	}
	if m.Permissions == nil {
		fmt.Fprintln(w, "  (no permissions block: the narrowest permissions apply)")
	}
	switch {
	case consent.Granted && consent.FilesChanged:
		fmt.Fprintln(w, "  consent: granted for these permissions, not for the extension's files as they are now; asked again before a tool runs")
		if consent.notice != "" {
			fmt.Fprintf(w, "  %s\n", consent.notice)
		}
	case consent.Granted:
		fmt.Fprintln(w, "  consent: granted for these permissions and these files")
	default:
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
		if line, ok := model[t.Name]; ok {
			fmt.Fprintf(w, "      model tool: %s\n", line)
		}
		for _, a := range t.Args {
			var notes []string
			if a.Optional() {
				notes = append(notes, "optional")
			}
			if len(a.Default) > 0 {
				notes = append(notes, "default "+extension.Printable(string(a.Default)))
			}
			note := ""
			if len(notes) > 0 {
				note = " (" + strings.Join(notes, ", ") + ")"
			}
			fmt.Fprintf(w, "      --%s <%s>%s  %s\n", a.Name, a.Type, note, a.Description)
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
	if len(it.Settings) > 0 {
		section("Settings")
		for _, st := range it.Settings {
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
			default:
				fmt.Fprintf(w, "      not set; set it with `gemini extensions config %s %s`\n", m.Name, st.EnvVar)
			}
		}
	}
	if len(it.Skills) > 0 || len(it.SkippedSkills) > 0 {
		section(fmt.Sprintf("Agent skills (%d)", len(it.Skills)))
		for _, sk := range it.Skills {
			fmt.Fprintf(w, "  %s: %s\n      %s\n", sk.Name, sk.Description, relPath(in.Extension.Dir, sk.Location))
			if line, ok := model[disclosure.SkillPrefix+sk.Name]; ok {
				fmt.Fprintf(w, "      model reads it with: %s\n", line)
			}
		}
		for _, sk := range it.SkippedSkills {
			fmt.Fprintf(w, "  not a skill: %s: %s (Gemini CLI skips it too)\n", relPath(in.Extension.Dir, sk.Location), sk.Reason)
		}
	}
	if len(it.Agents) > 0 {
		section(fmt.Sprintf("Agents (%d)", len(it.Agents)))
		for _, a := range it.Agents {
			fmt.Fprintf(w, "  %s: %s\n      %s\n", a.Name, a.Description, relPath(in.Extension.Dir, a.File))
		}
	}
	if len(it.Hooks) > 0 || it.HooksError != "" {
		section("Hooks (hooks/hooks.json)")
		writeHooks(w, it.Hooks, it.HooksError)
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

// writeHooks prints each hook event with its matchers and commands, the
// paths resolved as Gemini CLI runs them.
func writeHooks(w io.Writer, hooks json.RawMessage, hooksErr string) {
	if hooksErr != "" {
		fmt.Fprintf(w, "  unreadable: %s\n", hooksErr)
		return
	}
	var events map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(hooks, &events); err != nil {
		var buf bytes.Buffer
		json.Compact(&buf, hooks)
		fmt.Fprintf(w, "  %s\n", buf.String())
		return
	}
	for _, ev := range sortedKeys(events) {
		for _, def := range events[ev] {
			match := ""
			if def.Matcher != "" {
				match = " (" + def.Matcher + ")"
			}
			for _, h := range def.Hooks {
				fmt.Fprintf(w, "  %s%s: %s %s\n", ev, match, h.Type, h.Command)
			}
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
	if r, ok := fsutil.Rel(dir, p); ok {
		return filepath.ToSlash(r)
	}
	return p
}
