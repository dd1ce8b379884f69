// Package geminisettings edits the settings of Gemini CLI's user
// settings file that gemkit changes: mcp.excluded, the MCP server names
// Gemini CLI does not start or connect to; hooksConfig.disabled, the
// hooks it does not run; and gemkit's own hook definitions under hooks
// (edit.go). Switching an extension's MCP
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

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Keys gemkit may create to hold the list, as Created names them.
const (
	KeyMCP      = "mcp"
	KeyExcluded = "mcp.excluded"
)

// Path is Gemini CLI's user settings file for the home folder home (the
// folder that holds .gemini: $GEMINI_CLI_HOME or the person's home).
func Path(home string) string { return filepath.Join(home, ide.AgentGemini.HomeDir, "settings.json") }

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
	// Disabled is hooksConfig.disabled.
	Disabled []string
	// Hooks are the command hooks of the file's hooks object, gemkit's
	// own among them.
	Hooks []Hook
	// ToolSandboxing is security.toolSandboxing: Gemini CLI runs its
	// shell tool's commands (a model's, a custom command's !{...}) in
	// its own sandbox.
	ToolSandboxing bool
	// IDEEnabled is ide.enabled: IDE mode, which Gemini CLI takes from
	// its settings alone (packages/cli/src/config/config.ts in 0.61.0).
	IDEEnabled bool
}

// Hook is one command hook of the settings file, with its definition's
// matcher and sequential flag.
type Hook struct {
	Event, Name, Command string
	Matcher              string
	Sequential           bool
	Timeout              int
}

// Def is h as a HookDef.
func (h Hook) Def() HookDef {
	return HookDef{Event: h.Event, Matcher: h.Matcher, Sequential: h.Sequential, Name: h.Name, Command: h.Command, Timeout: h.Timeout}
}

// Key is the string of hooksConfig.disabled that disables h: its name,
// else its command (HookRegistry.getHookName).
func (h Hook) Key() string {
	if h.Name != "" {
		return h.Name
	}
	return h.Command
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
	if err := agentread.Unmarshal(stripComments(data), &top, false); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", path, err)
	}
	var out Settings
	if raw, ok := top["mcp"]; ok {
		var mcp map[string]json.RawMessage
		if agentread.Unmarshal(raw, &mcp, false) != nil {
			return Settings{}, fmt.Errorf("%s: mcp is not an object, as Gemini CLI expects; fix it first", path)
		}
		if ex, ok := mcp["excluded"]; ok && agentread.Unmarshal(ex, &out.Excluded, false) != nil {
			return Settings{}, fmt.Errorf("%s: mcp.excluded is not an array of server names, as Gemini CLI expects; fix it first", path)
		}
	}
	if raw, ok := top["security"]; ok {
		var sec struct {
			ToolSandboxing any `json:"toolSandboxing"`
		}
		if agentread.Unmarshal(raw, &sec, false) == nil {
			// Gemini CLI's settings schema takes "true" for true too.
			out.ToolSandboxing = sec.ToolSandboxing == true || sec.ToolSandboxing == "true"
		}
	}
	if raw, ok := top["ide"]; ok {
		var ideSettings struct {
			Enabled any `json:"enabled"`
		}
		if agentread.Unmarshal(raw, &ideSettings, false) == nil {
			out.IDEEnabled = ideSettings.Enabled == true || ideSettings.Enabled == "true"
		}
	}
	if raw, ok := top["hooksConfig"]; ok {
		var hc map[string]json.RawMessage
		if agentread.Unmarshal(raw, &hc, false) != nil {
			return Settings{}, fmt.Errorf("%s: hooksConfig is not an object, as Gemini CLI expects; fix it first", path)
		}
		if d, ok := hc["disabled"]; ok && agentread.Unmarshal(d, &out.Disabled, false) != nil {
			return Settings{}, fmt.Errorf("%s: hooksConfig.disabled is not an array of hook names, as Gemini CLI expects; fix it first", path)
		}
	}
	if raw, ok := top["hooks"]; ok {
		hooks, err := parseHooks(path, raw)
		if err != nil {
			return Settings{}, err
		}
		out.Hooks = hooks
	}
	if err := parseServers(path, top, &out); err != nil {
		return Settings{}, err
	}
	return out, nil
}

// parseHooks reads the command hooks of the settings' hooks object raw,
// by event; what is not a list of definitions (enabled, disabled,
// notifications) is passed over, as Gemini CLI does.
func parseHooks(path string, raw json.RawMessage) ([]Hook, error) {
	var events map[string]json.RawMessage
	if agentread.Unmarshal(raw, &events, false) != nil {
		return nil, fmt.Errorf("%s: hooks is not an object, as Gemini CLI expects; fix it first", path)
	}
	var hooks []Hook
	for ev, raw := range events {
		var defs []struct {
			Matcher    any `json:"matcher"`
			Sequential any `json:"sequential"`
			Hooks      []struct {
				Type    string `json:"type"`
				Name    string `json:"name"`
				Command string `json:"command"`
				Timeout any    `json:"timeout"`
			} `json:"hooks"`
		}
		if agentread.Unmarshal(raw, &defs, false) != nil {
			continue // enabled, disabled, notifications, or not a list
		}
		for _, d := range defs {
			matcher, _ := d.Matcher.(string)
			seq, _ := d.Sequential.(bool)
			for _, h := range d.Hooks {
				timeout, _ := h.Timeout.(float64)
				if h.Type == "command" && h.Command != "" {
					hooks = append(hooks, Hook{Event: ev, Name: h.Name, Command: h.Command, Matcher: matcher, Sequential: seq, Timeout: int(timeout)})
				}
			}
		}
	}
	slices.SortStableFunc(hooks, func(a, b Hook) int { return strings.Compare(a.Event, b.Event) })
	return hooks, nil
}

// parseServers sets out's server names from the settings' mcpServers,
// and the gemkit mcp server among them (the first by name) with the
// names of its environment.
func parseServers(path string, top map[string]json.RawMessage, out *Settings) error {
	var servers map[string]json.RawMessage
	if raw, ok := top["mcpServers"]; ok && agentread.Unmarshal(raw, &servers, false) != nil {
		return fmt.Errorf("%s: mcpServers is not an object, as Gemini CLI expects; fix it first", path)
	}
	for n, raw := range servers {
		out.Servers = append(out.Servers, n)
		var e struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		if agentread.Unmarshal(raw, &e, false) == nil && filepath.Base(e.Command) == "gemkit" && len(e.Args) > 0 && e.Args[0] == "mcp" && (out.Gemkit == "" || n < out.Gemkit) {
			out.Gemkit = n
			out.GemkitEnv = nil
			for k := range e.Env {
				out.GemkitEnv = append(out.GemkitEnv, k)
			}
			slices.Sort(out.GemkitEnv)
		}
	}
	slices.Sort(out.Servers)
	return nil
}

// Exclude adds names to mcp.excluded in the file at path (those not
// there yet, in order), making the file, the mcp object or its
// excluded array when absent. It returns the names it added and the
// keys it made (KeyMCP, KeyExcluded).
func Exclude(path string, names []string) (added, created []string, err error) {
	res, err := Apply(path, Edit{Exclude: names})
	return res.Excluded, res.Created, err
}

// Include removes names from mcp.excluded in the file at path, and then
// the keys of drop (KeyExcluded, KeyMCP) that are left empty: the undoing
// of Exclude. It returns the names it removed.
func Include(path string, names, drop []string) (removed []string, err error) {
	res, err := Apply(path, Edit{Include: names, Drop: drop})
	return res.Included, err
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// write checks that out means what before means, but for the lists
// and hook definitions gemkit keeps (sameBut), and writes it
// atomically: an existing file keeps its mode and owner, and a symlink
// (a dotfiles repository's) stays one, its target written as Gemini CLI
// writes through it; a new file is made 0600.
func write(path string, before, out []byte, ours func(command string) bool) error {
	if err := sameBut(before, out, ours); err != nil {
		return fmt.Errorf("gemkit did not write %s: its edit would have changed more than mcp.excluded, hooksConfig.disabled and its own hooks (%v); nothing was changed", path, err)
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
// once mcp.excluded, hooksConfig.disabled and the hook definitions ours
// names are set aside (with the objects and arrays left empty).
func sameBut(a, b []byte, ours func(command string) bool) error {
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
		drop := func(top, sub string) {
			if o, ok := m[top].(map[string]any); ok {
				delete(o, sub)
				if len(o) == 0 {
					delete(m, top)
				}
			}
		}
		drop("mcp", "excluded")
		drop("hooksConfig", "disabled")
		if hooks, ok := m["hooks"].(map[string]any); ok && ours != nil {
			for ev, v := range hooks {
				defs, ok := v.([]any)
				if !ok {
					continue
				}
				var keep []any
				for _, d := range defs {
					if !isOurs(d, ours) {
						keep = append(keep, d)
					}
				}
				if len(keep) == 0 {
					delete(hooks, ev)
				} else {
					hooks[ev] = keep
				}
			}
			if len(hooks) == 0 {
				delete(m, "hooks")
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

// isOurs reports whether the hook definition d holds a hook whose
// command ours names.
func isOurs(d any, ours func(string) bool) bool {
	def, ok := d.(map[string]any)
	if !ok {
		return false
	}
	hooks, _ := def["hooks"].([]any)
	for _, h := range hooks {
		if hm, ok := h.(map[string]any); ok {
			if c, ok := hm["command"].(string); ok && ours(c) {
				return true
			}
		}
	}
	return false
}
