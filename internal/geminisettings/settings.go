// Package geminisettings edits the one setting of Gemini CLI's user
// settings file that gemkit changes: mcp.excluded, the MCP server names
// Gemini CLI does not start or connect to. Switching an extension's MCP
// servers to gemkit (`gemkit extensions sandbox NAME`) adds their names
// there, its stdio and its remote servers', so that Gemini CLI no longer
// starts the stdio ones unconfined while `gemkit mcp` serves them in its
// sandbox, nor connects to the remote ones, which `gemkit mcp` connects
// to instead; switching back removes exactly what was added.
//
// Gemini CLI 0.61 honours mcp.excluded for an extension's servers as for
// the person's own: McpClientManager.maybeDiscoverMcpServer
// (packages/core/src/tools/mcp-client-manager.ts; dist/src/tools/
// mcp-client-manager.js in @google/gemini-cli-core) returns before
// connecting, to a stdio and a remote server alike (the check comes
// after the one for a command, url or httpUrl and before any transport
// is made), when isBlockedBySettings(name) finds the server's name in
// Config.getBlockedMcpServers(), which loadCliConfig
// (packages/cli/src/config/config.ts) fills from
// LoadedSettings.getConsolidatedExcludedMcpServers() (settings.ts): the
// mcp.excluded arrays of the system, system-defaults, user and workspace
// settings files together. The extension itself stays loaded (its
// context files, commands, hooks and skills). The list names servers,
// not extensions, and a name given --allowed-mcp-server-names on the
// command line sets it aside.
//
// The file is ~/.gemini/settings.json, with ~ being $GEMINI_CLI_HOME
// when set (Storage.getGlobalSettingsPath, homedir() in
// packages/core/src/utils/paths.ts). Gemini CLI reads it as JSON with
// comments; every other byte of it, comments included, is kept, the
// result is checked to mean the same as before but for mcp.excluded, and
// it is written atomically (internal/fsutil).
package geminisettings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Keys gemkit may create to hold the list, as Created names them.
const (
	KeyMCP      = "mcp"
	KeyExcluded = "mcp.excluded"
)

// Path is Gemini CLI's user settings file for the home folder home (the
// folder that holds .gemini: $GEMINI_CLI_HOME or the person's home).
func Path(home string) string { return filepath.Join(home, ".gemini", "settings.json") }

// Settings is what gemkit reads of the file.
type Settings struct {
	// Excluded is mcp.excluded.
	Excluded []string
	// Servers are the names of the person's own mcpServers entries.
	Servers []string
	// Gemkit is the name of the entry that starts `gemkit mcp`, "" when
	// none does.
	Gemkit string
	// GemkitEnv are the names of that entry's env: the variables Gemini
	// CLI passes gemkit mcp whatever its redaction (Redacted).
	GemkitEnv []string
}

// Read reads the file at path; an absent file reads as empty settings.
func Read(path string) (Settings, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("read Gemini CLI's settings: %w", err)
	}
	return parse(path, data)
}

func parse(path string, data []byte) (Settings, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Settings{}, nil
	}
	if _, err := parseDocument(data); err != nil {
		return Settings{}, readable(path, data, fmt.Errorf("%w; Gemini CLI cannot read it either: fix it first", err))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(stripComments(data), &top); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", path, err)
	}
	var out Settings
	if raw, ok := top["mcp"]; ok {
		var mcp map[string]json.RawMessage
		if json.Unmarshal(raw, &mcp) != nil {
			return Settings{}, fmt.Errorf("%s: mcp is not an object, as Gemini CLI expects; fix it first", path)
		}
		if ex, ok := mcp["excluded"]; ok && json.Unmarshal(ex, &out.Excluded) != nil {
			return Settings{}, fmt.Errorf("%s: mcp.excluded is not an array of server names, as Gemini CLI expects; fix it first", path)
		}
	}
	var servers map[string]json.RawMessage
	if raw, ok := top["mcpServers"]; ok && json.Unmarshal(raw, &servers) != nil {
		return Settings{}, fmt.Errorf("%s: mcpServers is not an object, as Gemini CLI expects; fix it first", path)
	}
	for n, raw := range servers {
		out.Servers = append(out.Servers, n)
		var e struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		if json.Unmarshal(raw, &e) == nil && filepath.Base(e.Command) == "gemkit" && len(e.Args) > 0 && e.Args[0] == "mcp" && (out.Gemkit == "" || n < out.Gemkit) {
			out.Gemkit = n
			out.GemkitEnv = nil
			for k := range e.Env {
				out.GemkitEnv = append(out.GemkitEnv, k)
			}
			slices.Sort(out.GemkitEnv)
		}
	}
	slices.Sort(out.Servers)
	return out, nil
}

// Exclude adds names to mcp.excluded in the file at path (those not
// there yet, in order), making the file, the mcp object or its
// excluded array when absent. It returns the names it added and the
// keys it made (KeyMCP, KeyExcluded).
func Exclude(path string, names []string) (added, created []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read Gemini CLI's settings: %w", err)
	}
	out, added, created, err := exclude(path, data, names)
	if err != nil || len(added) == 0 {
		return nil, nil, err
	}
	return added, created, write(path, data, out)
}

// Include removes names from mcp.excluded in the file at path, and then
// the keys of drop (KeyExcluded, KeyMCP) that are left empty: the undoing
// of Exclude. It returns the names it removed.
func Include(path string, names, drop []string) (removed []string, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Gemini CLI's settings: %w", err)
	}
	out, removed, err := include(path, data, names, drop)
	if err != nil || bytes.Equal(out, data) {
		return removed, err
	}
	return removed, write(path, data, out)
}

func exclude(path string, data []byte, names []string) (out []byte, added, created []string, err error) {
	st, err := parse(path, data)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, n := range names {
		if !slices.Contains(st.Excluded, n) && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return data, nil, nil, nil
	}
	list := make([]string, len(added))
	for i, n := range added {
		list[i] = quote(n)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{\n  \"mcp\": {\n    \"excluded\": [" + strings.Join(list, ", ") + "]\n  }\n}\n"), added, []string{KeyMCP, KeyExcluded}, nil
	}
	root, _ := parseDocument(data)
	mcp := root.find("mcp")
	if mcp == nil {
		out = addMember(data, root, "mcp", `{ "excluded": [`+strings.Join(list, ", ")+`] }`)
		return out, added, []string{KeyMCP, KeyExcluded}, nil
	}
	obj, _ := parseValue(data, mcp.val.start)
	if obj.kind != '{' {
		return nil, nil, nil, readable(path, data, &syntaxError{mcp.val.start, "mcp is not an object, as Gemini CLI expects; fix it first"})
	}
	ex := obj.find("excluded")
	if ex == nil {
		return addMember(data, obj, "excluded", "["+strings.Join(list, ", ")+"]"), added, []string{KeyExcluded}, nil
	}
	arr, _ := parseValue(data, ex.val.start)
	if arr.kind != '[' {
		return nil, nil, nil, readable(path, data, &syntaxError{ex.val.start, "mcp.excluded is not an array, as Gemini CLI expects; fix it first"})
	}
	if len(arr.elems) == 0 {
		return splice(data, arr.open+1, arr.closeOff, strings.Join(list, ", ")), added, nil, nil
	}
	last := arr.elems[len(arr.elems)-1]
	return splice(data, last.end, last.end, ", "+strings.Join(list, ", ")), added, nil, nil
}

func include(path string, data []byte, names, drop []string) (out []byte, removed []string, err error) {
	if _, err := parse(path, data); err != nil {
		return nil, nil, err
	}
	out = data
	for {
		root, _ := parseDocument(out)
		arr, obj := excludedOf(out, root)
		if arr.kind == '[' {
			if i := slices.IndexFunc(arr.elems, func(e span) bool {
				var s string
				return json.Unmarshal(out[e.start:e.end], &s) == nil && slices.Contains(names, s)
			}); i >= 0 {
				var s string
				_ = json.Unmarshal(out[arr.elems[i].start:arr.elems[i].end], &s)
				removed = append(removed, s)
				out = removeAt(out, arr.elems, i)
				continue
			}
			if len(arr.elems) == 0 && slices.Contains(drop, KeyExcluded) {
				i := slices.IndexFunc(obj.members, func(m member) bool { return m.key == "excluded" })
				out = removeAt(out, memberSpans(obj), i)
				continue
			}
			return out, removed, nil
		}
		if obj.kind == '{' && len(obj.members) == 0 && slices.Contains(drop, KeyMCP) {
			i := slices.IndexFunc(root.members, func(m member) bool { return m.key == "mcp" })
			out = removeAt(out, memberSpans(root), i)
			// A file gemkit made, or an empty object it filled, is "{}"
			// again rather than braces around blank lines.
			if r, err := parseDocument(out); err == nil && len(r.members) == 0 && len(bytes.TrimSpace(out[r.open+1:r.closeOff])) == 0 {
				out = []byte("{}\n")
			}
		}
		return out, removed, nil
	}
}

// excludedOf finds mcp.excluded in the document root: the array and the
// mcp object (each of kind 0 when there is none).
func excludedOf(data []byte, root node) (arr, obj node) {
	mcp := root.find("mcp")
	if mcp == nil {
		return node{}, node{}
	}
	obj, _ = parseValue(data, mcp.val.start)
	if obj.kind != '{' {
		return node{}, node{}
	}
	ex := obj.find("excluded")
	if ex == nil {
		return node{}, obj
	}
	arr, _ = parseValue(data, ex.val.start)
	return arr, obj
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// write checks that out means what before means, but for mcp.excluded
// (and the empty mcp object gemkit made or removes), and writes it
// atomically: an existing file keeps its mode and owner, and a symlink
// (a dotfiles repository's) stays one, its target written as Gemini CLI
// writes through it; a new file is made 0600.
func write(path string, before, out []byte) error {
	if err := sameBut(before, out); err != nil {
		return fmt.Errorf("gemkit did not write %s: its edit would have changed more than mcp.excluded (%v); nothing was changed", path, err)
	}
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real
	}
	var err error
	if _, statErr := os.Stat(target); statErr == nil {
		err = fsutil.ReplaceFile(target, out)
	} else if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
		err = fsutil.WriteFileAtomic(path, out, 0o600)
	}
	if err != nil {
		return fmt.Errorf("write Gemini CLI's settings: %w", err)
	}
	return nil
}

// sameBut reports an error unless a and b decode to the same settings
// once mcp.excluded (and an mcp object left empty) is set aside.
func sameBut(a, b []byte) error {
	decode := func(data []byte) (map[string]any, error) {
		m := map[string]any{}
		if len(bytes.TrimSpace(data)) == 0 {
			return m, nil
		}
		if _, err := parseDocument(data); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(stripComments(data), &m); err != nil {
			return nil, err
		}
		if mcp, ok := m["mcp"].(map[string]any); ok {
			delete(mcp, "excluded")
			if len(mcp) == 0 {
				delete(m, "mcp")
			}
		}
		return m, nil
	}
	ma, err := decode(a)
	if err != nil {
		return err
	}
	mb, err := decode(b)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(ma, mb) {
		return errors.New("the other settings differ")
	}
	return nil
}
