package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Conflict is something two installed extensions clash on.
type Conflict struct {
	// Kind is ConflictName or ConflictMCPServer.
	Kind string `json:"kind"`
	// Name is the extension name or MCP server name they share.
	Name string `json:"name"`
	// Entries are the entries of the extensions folder involved, sorted.
	Entries []string `json:"entries"`
	// Fatal is true when Gemini CLI refuses to run while it lasts.
	Fatal   bool   `json:"fatal"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// Kinds of Conflict.
const (
	// ConflictName: two folders whose manifests carry one name (a copied
	// folder). Gemini CLI stops loading extensions at the second
	// ("Extension with name … already was loaded"), so every Gemini
	// command that loads extensions fails, `gemini mcp list` included.
	ConflictName = "duplicate-name"
	// ConflictMCPServer: two extensions define an MCP server of one name;
	// Gemini CLI keeps one of them.
	ConflictMCPServer = "duplicate-mcp-server"
)

// Conflicts finds the clashes among the installed extensions all (as
// List returns them). Like Gemini CLI it compares names exactly and
// counts only extensions it can load.
func Conflicts(all []*Installed) []Conflict {
	byName := map[string][]*Installed{}
	byServer := map[string][]*Installed{}
	for _, in := range all {
		m := in.Manifest()
		if m == nil || m.AgentPlugin || m.Name == "" || m.Version == "" {
			// Gemini CLI loads no Agent Plugins plugin: it clashes with
			// nothing there (gemkit mcp serves the extension of its name,
			// disclosure.Load).
			continue
		}
		byName[m.Name] = append(byName[m.Name], in)
		for srv := range m.MCPServers {
			byServer[srv] = append(byServer[srv], in)
		}
	}
	var out []Conflict
	for name, ins := range byName {
		if len(ins) < 2 {
			continue
		}
		entries := entriesOf(ins)
		var copies []string
		for _, in := range ins {
			if in.Name != name {
				copies = append(copies, in.Name)
			}
		}
		sort.Strings(copies)
		if len(copies) == len(ins) {
			copies = copies[1:]
		}
		out = append(out, Conflict{Kind: ConflictName, Name: name, Entries: entries, Fatal: true,
			Message: fmt.Sprintf("%d folders hold an extension called %q (%s); Gemini CLI refuses to load any extension while they do (\"Extension with name %s already was loaded\")",
				len(ins), name, strings.Join(entries, ", "), name),
			Fix: "keep one: remove the copy with `gemkit extensions uninstall " + strings.Join(copies, "` and `gemkit extensions uninstall ") + "` (by folder name)"})
	}
	for srv, ins := range byServer {
		if len(ins) < 2 {
			continue
		}
		// Copies of one extension share its servers too; that is the
		// name conflict, not another one.
		seen := map[string]bool{}
		var names []string
		for _, in := range ins {
			if n := in.Manifest().Name; !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		if len(names) < 2 {
			continue
		}
		sort.Strings(names)
		// Gemini CLI 0.61 loads the extensions in the order of their
		// folders' names (fs.readdir, which Node sorts) and skips a
		// server whose name another extension's holds
		// (McpClientManager.maybeDiscoverMcpServer): the first enabled
		// one runs.
		order := slices.Clone(ins)
		sort.Slice(order, func(i, j int) bool { return order[i].Name < order[j].Name })
		var folders []string
		for _, in := range order {
			folders = append(folders, in.Name)
		}
		out = append(out, Conflict{Kind: ConflictMCPServer, Name: srv, Entries: entriesOf(ins),
			Message: fmt.Sprintf("the extensions %s each define an MCP server called %q; Gemini CLI runs only one of them: of those enabled, the first in its extensions folder's order (%s), skipping the others'", strings.Join(names, ", "), srv, strings.Join(folders, ", then ")),
			Fix:     "disable all but one of these extensions (`gemkit extensions disable NAME`), ask their authors to rename the server, or switch them to gemkit (`gemkit extensions sandbox NAME`), whose gemkit mcp serves each apart"})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Fatal != out[j].Fatal {
			return out[i].Fatal
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func entriesOf(ins []*Installed) []string {
	out := make([]string, 0, len(ins))
	for _, in := range ins {
		out = append(out, in.Entry)
	}
	sort.Strings(out)
	return out
}

// ConflictsOf returns the conflicts that involve the entry.
func ConflictsOf(cs []Conflict, entry string) []Conflict {
	var out []Conflict
	for _, c := range cs {
		for _, e := range c.Entries {
			if filepath.Clean(e) == filepath.Clean(entry) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// ConflictsWith returns the conflicts that involve the entry among
// everything installed. It reads only the name, version and MCP server
// names of each manifest, not the whole extension, so describing one
// extension stays quick with hundreds installed.
func (s *Store) ConflictsWith(entry string) ([]Conflict, error) {
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the extensions folder: %w", err)
	}
	// Spread the reads over the CPUs, as List does.
	found := make([]*Installed, len(entries))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(entries)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(entries); i = int(next.Add(1) - 1) {
				found[i] = s.shallowEntry(entries[i])
			}
		})
	}
	wg.Wait()
	var all []*Installed
	for _, in := range found {
		if in != nil {
			all = append(all, in)
		}
	}
	return ConflictsOf(Conflicts(all), entry), nil
}

// shallowEntry reads the name, version and MCP server names of one entry
// of the extensions folder; nil when it holds no readable manifest. The
// manifest is looked for in the entry first: only a linked extension's
// entry lacks one and needs its install metadata read.
func (s *Store) shallowEntry(e fs.DirEntry) *Installed {
	if isStagingName(e.Name()) || (!e.IsDir() && e.Type()&fs.ModeSymlink == 0) {
		return nil
	}
	in := &Installed{Name: e.Name(), Entry: filepath.Join(s.Dir(), e.Name())}
	dir := in.Entry
	raw, err := readIn(dir, ManifestFile, maxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		md, mdErr := readMetadata(in.Entry)
		if mdErr != nil || md == nil || md.Type != SourceLink {
			return nil
		}
		dir = md.Source
		raw, err = readIn(dir, ManifestFile, maxManifestBytes)
	}
	if err != nil {
		return nil
	}
	var head struct {
		Name       string                     `json:"name"`
		Version    string                     `json:"version"`
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return nil
	}
	m := &Manifest{Name: head.Name, Version: head.Version, MCPServers: head.MCPServers}
	in.Extension = &Extension{Dir: dir, Manifest: m}
	return in
}
