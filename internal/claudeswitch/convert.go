package claudeswitch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/shell"
)

// Input is what a conversion needs besides the plugin's folder.
type Input struct {
	// Plugin and Market name the plugin (P@M).
	Plugin, Market string
	// Home is gemkit's plugin home TH, and Gemkit gemkit's program by
	// its full path: the twin plugin's runners name both.
	Home, Gemkit string
	Vars         Vars
}

// Twin is a plugin converted: the files gemkit writes over the copy of
// the plugin's folder to make the twin extension, and those of the twin
// plugin beside the copied skills, agents and commands.
type Twin struct {
	// Name is the twin extension's name (TwinName).
	Name string
	// Extension are the files written into the twin extension's folder
	// (slash paths): gemini-extension.json, and hooks/hooks.json when
	// the plugin has hooks.
	Extension map[string][]byte
	// Plugin are the twin plugin's own files: .claude-plugin/plugin.json,
	// and .mcp.json, hooks/hooks.json, .lsp.json, monitors/monitors.json
	// for the parts the plugin has.
	Plugin map[string][]byte
	// Servers are the plugin's MCP servers' names, Hooks the labels of
	// its command hooks, LSP and Monitors the names of those.
	Servers, Hooks, LSP, Monitors []string
}

// Convert converts the plugin in the folder r (read as Claude Code
// 2.1.330 reads it, through r so that no link leads out) into its twin.
// Whatever the twin would not run as Claude Code runs it is an error
// that says what and why: nothing is half converted.
func Convert(r *fsutil.Root, in Input) (*Twin, error) {
	x := TwinName(in.Plugin, in.Market)
	if x == "" {
		return nil, fmt.Errorf("%s@%s: no extension name can be made of it", extension.Printable(in.Plugin), extension.Printable(in.Market))
	}
	man, err := claudeplugin.Manifest(r)
	if err != nil {
		return nil, err
	}
	t := &Twin{Name: x, Extension: map[string][]byte{}, Plugin: map[string][]byte{}}
	servers, err := t.servers(r, man, in)
	if err != nil {
		return nil, err
	}
	ext := object{{"name", x}, {"version", strOr(man, "version", "0.0.0")}}
	if d, ok := strField(man, "description"); ok {
		ext = append(ext, member{"description", d})
	}
	if len(servers) > 0 {
		ext = append(ext, member{"mcpServers", servers})
	}
	t.Extension[extension.ManifestFile] = ext.indent()
	// Always written, so that a hooks/hooks.json Claude Code does not
	// load (the manifest names another file) is none of the twin's.
	t.Extension["hooks/hooks.json"] = object{{"hooks", object{}}}.indent()
	if err := t.hooks(r, man, in); err != nil {
		return nil, err
	}
	if err := t.lsp(r, man, in); err != nil {
		return nil, err
	}
	if err := t.monitors(r, man, in); err != nil {
		return nil, err
	}
	t.Plugin[".claude-plugin/plugin.json"] = pluginManifest(man, in.Plugin)
	return t, nil
}

// pluginManifest is the twin plugin's manifest: the plugin's name (so
// every skill, agent and command keeps its P: name), version and
// description, and the folders it adds skills, agents and commands from;
// nothing that runs.
func pluginManifest(man agentread.Value, name string) []byte {
	m := object{{"name", name}}
	for _, k := range []string{"version", "description", "skills", "agents", "commands"} {
		if v, ok := man.Get(k); ok {
			m = append(m, member{k, json.RawMessage(v.JSON(false))})
		}
	}
	return m.indent()
}

// serverKeys are the keys of a Claude Code MCP server entry gemkit
// converts; an entry with any other is refused.
var serverKeys = []string{"type", "command", "args", "env", "url", "headers"}

// servers converts the plugin's MCP servers (.mcp.json's mcpServers, or
// the manifest's) into the twin extension's mcpServers, and writes the
// twin plugin's .mcp.json: one server running gemkit mcp --only.
func (t *Twin) servers(r *fsutil.Root, man agentread.Value, in Input) (object, error) {
	entries, err := claudeplugin.ServerEntries(r, man, "mcpServers")
	if err != nil {
		return nil, err
	}
	var out object
	for _, e := range entries {
		at := fmt.Sprintf("%s: the server %s", e.Where, extension.Printable(e.Name))
		conv, err := server(e.Value, at, in.Vars)
		if err != nil {
			return nil, err
		}
		out = append(out, member{e.Name, conv})
		t.Servers = append(t.Servers, e.Name)
	}
	if len(out) == 0 {
		return nil, nil
	}
	limit := 64 - len(toolPrefix(in.Plugin))
	if limit < 16 {
		return nil, fmt.Errorf("the plugin's name %s is too long: Claude Code would put %s before each tool's name, leaving fewer than 16 of the 64 characters its model's API takes", extension.Printable(in.Plugin), toolPrefix(in.Plugin))
	}
	entry := object{{"command", in.Gemkit}, {"args", []string{"mcp", "--home", in.Home, "--only", t.Name, "--code-intel=false", "--name-limit", strconv.Itoa(limit)}}}
	t.Plugin[".mcp.json"] = object{{"mcpServers", object{{ServerName, entry}}}}.indent()
	return out, nil
}

// server converts one server entry: a stdio one (no type, or "stdio")
// with its command, args and env; a remote one ("http", "sse") with its
// url and headers. Every string's variables are expanded (Vars.expand).
func server(s agentread.Value, at string, vars Vars) (object, error) {
	if !s.IsObject() {
		return nil, fmt.Errorf("%s is a %s, not an object", at, s.TypeOf())
	}
	for _, k := range s.Keys() {
		if !slices.Contains(serverKeys, k) {
			return nil, fmt.Errorf("%s has %q, which gemkit does not convert: not switched", at, extension.Printable(k))
		}
	}
	var e struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	if err := agentread.Decode(s, &e, false); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	str := func(v string) (string, error) { return vars.expand(v, at, true) }
	strict := func(v string) (string, error) { return vars.expand(v, at, false) }
	var out object
	switch e.Type {
	case "", "stdio":
		if e.Command == "" || e.URL != "" {
			return nil, fmt.Errorf("%s: a stdio server needs a command and no url", at)
		}
		cmd, err := str(e.Command)
		if err != nil {
			return nil, err
		}
		out = object{{"command", cmd}}
		if len(e.Args) > 0 {
			args := make([]string, len(e.Args))
			for i, a := range e.Args {
				if args[i], err = str(a); err != nil {
					return nil, err
				}
			}
			out = append(out, member{"args", args})
		}
		return withMap(out, s, "env", e.Env, strict)
	case "http", "sse":
		if e.URL == "" || e.Command != "" {
			return nil, fmt.Errorf("%s: a remote server needs a url and no command", at)
		}
		u, err := str(e.URL)
		if err != nil {
			return nil, err
		}
		key := "httpUrl"
		if e.Type == "sse" {
			key = "url"
		}
		out = object{{key, u}}
		return withMap(out, s, "headers", e.Headers, strict)
	}
	return nil, fmt.Errorf("%s: its type %q is not one gemkit converts (stdio, http, sse)", at, extension.Printable(e.Type))
}

// withMap appends key, the map m of s in its order, each value expanded.
func withMap(out object, s agentread.Value, key string, m map[string]string, str func(string) (string, error)) (object, error) {
	v, ok := s.Get(key)
	if !ok {
		return out, nil
	}
	var o object
	for _, k := range v.Keys() {
		val, err := str(m[k])
		if err != nil {
			return nil, err
		}
		o = append(o, member{k, val})
	}
	return append(out, member{key, o}), nil
}

// runner is the shell command of the twin's runner for one part, as
// the twin plugin's hooks and monitors name it.
func runner(in Input, args ...string) string {
	parts := []string{shell.Quote(in.Gemkit)}
	for _, a := range args {
		parts = append(parts, shell.Quote(a))
	}
	return strings.Join(parts, " ")
}

// strField is the manifest's string key.
func strField(man agentread.Value, key string) (string, bool) {
	v, ok := man.Get(key)
	if !ok {
		return "", false
	}
	return v.Str()
}

func strOr(man agentread.Value, key, def string) string {
	if s, ok := strField(man, key); ok && s != "" {
		return s
	}
	return def
}

// member is one key of a JSON object gemkit writes, in order.
type member struct {
	k string
	v any
}

// object is a JSON object that keeps its keys' order.
type object []member

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(m.k)
		v, err := marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is v as JSON, <, > and & as they are (JSON.parse reads
// either; a person reads these).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// indent is o as a file: two spaces, as Claude Code and Gemini CLI
// write theirs, and a newline.
func (o object) indent() []byte {
	raw, err := marshal(o)
	if err != nil {
		panic(err) // only strings, numbers and raw JSON that parsed
	}
	var b bytes.Buffer
	_ = json.Indent(&b, raw, "", "  ")
	b.WriteByte('\n')
	return b.Bytes()
}
