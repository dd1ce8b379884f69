package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
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
			all, err := st.List()
			if err != nil {
				return err
			}
			enabled, err := st.Enablements()
			if err != nil {
				fmt.Fprintf(a.Err, "gemkit: %v\n", err)
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
			out := bufio.NewWriter(a.Out)
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
