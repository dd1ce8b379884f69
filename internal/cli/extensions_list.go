package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

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

	// What Gemini CLI shows too, under the names `gemini extensions list
	// -o json` gives them.
	ID           string            `json:"id,omitempty"`
	ExcludeTools []string          `json:"excludeTools"`
	Themes       []string          `json:"themes"`
	Skills       []extension.Skill `json:"skills"`
	// SkippedSkills are the SKILL.md files that are not skills, with why.
	SkippedSkills []extension.SkippedSkill `json:"skippedSkills,omitempty"`
	Agents        []extension.Agent        `json:"agents"`
	Hooks         json.RawMessage          `json:"hooks,omitempty"`
	HooksError    string                   `json:"hooksError,omitempty"`
	Settings      []extension.SettingState `json:"settings"`
	// UpdatedBy names the tools that can update the extension (see
	// updaters).
	UpdatedBy []string `json:"updatedBy"`
	// UpdateNote says why a tool cannot update it, when one cannot.
	UpdateNote string               `json:"updateNote,omitempty"`
	Conflicts  []extension.Conflict `json:"conflicts,omitempty"`
	// ServerSandbox says where its stdio MCP servers run (in Gemini CLI
	// unconfined, or in gemkit's sandbox) and how to switch them; absent
	// when it has none.
	ServerSandbox *extswitch.ServerState `json:"serverSandbox,omitempty"`
	// CodeParts say where each part of it that runs code runs: its
	// servers, its agents' servers, its hooks, its custom commands'
	// !{...} shell and its skills' scripts.
	CodeParts []extswitch.CodePart `json:"codeParts,omitempty"`
	// choice is the person's choice for it (describe's refusals).
	choice extension.ServerChoice
	// HeldInGemini, when set, says that gemkit holds the extension in
	// Gemini CLI: switched, it changed since the person agreed
	// (internal/extswitch, hold.go).
	HeldInGemini *extension.Hold `json:"heldInGemini,omitempty"`
}

// updaters says which tools can update an installed extension, and why
// not when one cannot. Gemini CLI's update of a git install runs git in
// the installed folder (ls-remote, then a fresh clone); a --path install
// holds only the repository's sub-folder and no .git, so Gemini CLI
// fails there ("not a git repository") and would install the whole
// repository if it got further. Its local installs compare the source's
// version and copy again, as gemkit's do; it can update a gemkit
// file:// install, which is a git install with a .git. GitHub release
// installs are Gemini CLI's alone.
func updaters(md *extension.InstallMetadata) ([]string, string) {
	switch {
	case md == nil:
		return []string{}, "no " + extension.InstallMetadataFile + ": the source is unknown, so neither tool can update it"
	case md.Subdir != "":
		return []string{"gemkit"}, "only gemkit updates it: it was installed from the folder " + md.Subdir + " of a git repository (--path), which Gemini CLI's update does not know"
	case md.Type == extension.SourceGitHubRelease:
		return []string{"gemini"}, "only Gemini CLI updates it: it was installed from a GitHub release"
	}
	return []string{"gemkit", "gemini"}, ""
}

type sourceInfo struct {
	Type   string `json:"type"`
	Source string `json:"source"`
	Ref    string `json:"ref,omitempty"`
	Subdir string `json:"subdir,omitempty"`
}

type permissionsInfo struct {
	Read            extension.Access `json:"read"`
	Write           extension.Access `json:"write"`
	ProtectedWrites []string         `json:"protectedWrites,omitempty"`
	Credentials     []string         `json:"credentials,omitempty"`
	AllowedHosts    []string         `json:"allowedHosts"`
	Summary         []string         `json:"summary"`
	Hash            string           `json:"hash"`
}

// permissionsOf is what list --json and describe show of m's
// permissions, from its Terms worked out once.
func permissionsOf(m *extension.Manifest) *permissionsInfo {
	t := m.Terms()
	p := t.Policy
	return &permissionsInfo{Read: p.Read, Write: p.Write, ProtectedWrites: p.ProtectedWrites,
		Credentials: p.Credentials, AllowedHosts: p.AllowedHosts, Summary: t.Lines, Hash: t.Hash}
}

func sourceOf(in *extension.Installed) *sourceInfo {
	if in.Metadata == nil {
		return nil
	}
	return &sourceInfo{Type: in.Metadata.Type, Source: in.Metadata.Source, Ref: in.Metadata.Ref, Subdir: in.Metadata.Subdir}
}

// listEntry summarises one installed extension in full, for list
// --json, describe and install --json; en is its enablement when the
// caller has it already.
func listEntry(st *extension.Store, in *extension.Installed, en *extension.Enablement) listItem {
	it := listRow(st, in, en)
	if in.Extension == nil {
		return it
	}
	m := in.Extension.Manifest
	for _, d := range m.Docs {
		it.Docs = append(it.Docs, d.Name)
	}
	it.ContextFiles = append(it.ContextFiles, in.Extension.ContextFiles...)
	it.Permissions = permissionsOf(m)
	it.ID = extension.ExtensionID(m.Name, in.Metadata)
	it.ExcludeTools = append(it.ExcludeTools, m.ExcludeTools...)
	it.Themes = themeNames(m)
	view := in.Extension.GeminiView(st.Workspace())
	it.Skills, it.SkippedSkills, it.Agents = view.Skills, view.SkippedSkills, view.Agents
	if view.HooksErr != nil {
		it.HooksError = view.HooksErr.Error()
	} else {
		it.Hooks = view.Hooks
	}
	it.Settings = in.Settings(st.Dir(), st.Workspace())
	return it
}

// listRow is what the text list shows of an installed extension (its
// row, and the notes under the table) and no more: the rest of
// listEntry reads more files of each extension (skills, agents, hooks,
// settings) and hashes its permissions, which the table does not show.
func listRow(st *extension.Store, in *extension.Installed, en *extension.Enablement) listItem {
	it := listItem{Name: in.Name, Path: in.Entry, Entry: in.Entry, Source: sourceOf(in),
		Tools: []string{}, Docs: []string{}, MCPServers: []string{}, ContextFiles: []string{},
		ExcludeTools: []string{}, Themes: []string{}, Skills: []extension.Skill{}, Agents: []extension.Agent{}, Settings: []extension.SettingState{}}
	it.UpdatedBy, it.UpdateNote = updaters(in.Metadata)
	var ve *extension.ValidationError
	if in.Err != nil && !errors.As(in.Err, &ve) {
		it.Error = in.Err.Error()
	}
	if in.Extension != nil {
		// Every problem, with what it stops; the warnings too.
		it.Problems = in.Extension.Problems
	}
	name := in.Name
	if in.Extension != nil {
		m := in.Extension.Manifest
		name = m.Name
		it.Name, it.Version, it.Description, it.Path = m.Name, m.Version, m.Description, in.Extension.Dir
		for _, t := range m.Tools {
			it.Tools = append(it.Tools, t.Name)
		}
		it.MCPServers = sortedNames(m.MCPServers)
	}
	if en != nil {
		it.Enabled = *en
	} else {
		it.Enabled, _ = st.Enablement(name)
	}
	return it
}

// themeNames lists the names of the themes the manifest adds.
func themeNames(m *extension.Manifest) []string {
	out := []string{}
	for _, raw := range m.Themes {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			out = append(out, t.Name)
		}
	}
	return out
}

// errConflicts is the exit status of list and describe
// when Gemini CLI would fail on what they found (two extensions of one
// name): 1, as `gemini extensions list` exits then.
func errConflicts(cs []extension.Conflict) error {
	for _, c := range cs {
		if c.Fatal {
			return withExitCode(ExitNo, nil)
		}
	}
	return nil
}

// writeConflicts prints each conflict with its fix.
func writeConflicts(w io.Writer, cs []extension.Conflict) {
	for _, c := range cs {
		word := "warning"
		if c.Fatal {
			word = "error"
		}
		fmt.Fprintf(w, "! %s: %s\n    fix: %s\n", word, c.Message, c.Fix)
	}
}

func sortedNames(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newExtListCmd(a *app) *cobra.Command {
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
			// what is live. Only the gemkit process itself (Main) may
			// do this; callers of Run, such as tests, go on after.
			if a.setGCPercent != nil {
				defer a.setGCPercent(a.setGCPercent(400))
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			all, err := st.List()
			if err != nil {
				return err
			}
			enabled, err := st.Enablements()
			if err != nil {
				fmt.Fprintf(a.Err, "gemkit: %v\n", err)
			}
			ens := enablementsOf(all, enabled)
			// The text list shows a row of each extension; --json
			// shows everything, which is a few more file reads per
			// extension (skills, agents, hooks, .env): spread them over
			// the CPUs as List does the manifests.
			entry := listRow
			if asJSON {
				entry = listEntry
			}
			items := make([]listItem, len(all))
			var next atomic.Int64
			var wg sync.WaitGroup
			for range min(runtime.GOMAXPROCS(0), len(all)) {
				wg.Go(func() {
					for i := int(next.Add(1) - 1); i < len(all); i = int(next.Add(1) - 1) {
						items[i] = entry(st, all[i], &ens[i])
					}
				})
			}
			wg.Wait()
			conflicts := extension.Conflicts(all)
			for i, in := range all {
				items[i].Conflicts = extension.ConflictsOf(conflicts, in.Entry)
			}
			sw := a.switcher(st)
			choices, gs, gsErr, err := sw.ServerSettings()
			if err != nil {
				fmt.Fprintf(a.Err, "gemkit: %v\n", err)
			}
			fillServers(sw, items, all, choices, gs.Excluded, gsErr)
			for i, in := range all {
				if m := in.Manifest(); m != nil {
					if gsErr == nil {
						// Where each part runs is read from the file.
						items[i].CodeParts = sw.CodeParts(in, choices[m.Name], gs)
					}
				}
			}
			if holds, err := st.Holds(); err == nil {
				for i, in := range all {
					if h, ok := holds[in.Name]; ok {
						items[i].HeldInGemini = &h
					}
				}
			}
			// One write at the end: tabwriter writes each cell on its
			// own, a system call each on an unbuffered stdout.
			out := bufio.NewWriter(a.Out)
			defer out.Flush()
			if asJSON {
				if err := writeJSON(out, items); err != nil {
					return err
				}
				return errConflicts(conflicts)
			}
			if len(items) == 0 {
				fmt.Fprintf(out, "No extensions installed in %s.\n", st.Dir())
				return nil
			}
			writeListTable(out, items, conflicts)
			if err := out.Flush(); err != nil {
				return err
			}
			return errConflicts(conflicts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// enablementsOf is each installed extension's enablement, found by its
// manifest's name where it can be read, else by its folder's.
func enablementsOf(all []*extension.Installed, enabled func(string) extension.Enablement) []extension.Enablement {
	ens := make([]extension.Enablement, len(all))
	for i, in := range all {
		name := in.Name
		if m := in.Manifest(); m != nil {
			name = m.Name
		}
		ens[i] = enabled(name)
	}
	return ens
}

// writeListTable writes the text list: a row of each extension, then a
// line on each that cannot be read or has manifest problems, a note on
// each installed from a sub-folder, and the conflicts.
func writeListTable(out io.Writer, items []listItem, conflicts []extension.Conflict) {
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
		enabled := enabledWord(it.Enabled)
		if it.HeldInGemini != nil {
			enabled = "held (changed)"
			if it.HeldInGemini.Fix != "" {
				enabled = "held"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", it.Name, version, enabled, len(it.Tools), len(it.MCPServers), src)
		if it.Error != "" || stopping(it.Problems) != "" {
			broken = append(broken, it)
		}
	}
	tw.Flush()
	for _, it := range broken {
		if it.Error != "" {
			fmt.Fprintf(printableWriter{out}, "! %s cannot be read: %s\n", it.Name, firstLine(it.Error))
		} else {
			fmt.Fprintf(printableWriter{out}, "! %s: %s; see `gemkit extensions validate %s`\n", it.Name, stopping(it.Problems), it.Path)
		}
	}
	for _, it := range items {
		if h := it.HeldInGemini; h != nil && h.Fix != "" {
			fmt.Fprintf(printableWriter{out}, "held: %s: %s; Gemini CLI runs none of it. To end the hold: %s\n", it.Name, h.Why, h.Fix)
		} else if h != nil {
			fmt.Fprintf(printableWriter{out}, "held: %s: %s; Gemini CLI runs none of it, and gemkit mcp none of what changed, until you agree again: `gemkit extensions consent %s --grant`\n", it.Name, h.Why, it.Name)
		}
		if it.Source != nil && it.Source.Subdir != "" {
			fmt.Fprintf(printableWriter{out}, "note: %s: %s\n", it.Name, it.UpdateNote)
		}
	}
	writeServerNotes(printableWriter{out}, items)
	for _, it := range items {
		if words := partSummary(it.CodeParts); words != "" {
			fmt.Fprintf(printableWriter{out}, "code of %s: %s\n", it.Name, words)
		}
	}
	writeConflicts(printableWriter{out}, conflicts)
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

// stopping says what the problems of a manifest stop, with how many
// there are; "" when they stop nothing (warnings only).
func stopping(probs []extension.Problem) string {
	count := map[extension.Effect]int{}
	for _, p := range probs {
		count[p.Effect]++
	}
	switch {
	case count[extension.EffectRefused] > 0:
		return fmt.Sprintf("Gemini CLI refuses its manifest too, and both leave it out (%d problem(s))", count[extension.EffectRefused])
	case count[extension.EffectTools] > 0:
		return fmt.Sprintf("gemkit does not run its own tools: %d problem(s) in the manifest's fields only gemkit reads", count[extension.EffectTools])
	}
	return ""
}
