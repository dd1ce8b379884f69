package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// CommandHook is one command hook of an extension's hooks/hooks.json, as
// Gemini CLI 0.61 loads it (ExtensionManager.loadExtensionHooks in
// packages/cli/src/config/extension-manager.ts, HookRegistry in
// packages/core/src/hooks/hookRegistry.ts): under an event name it
// knows, in a definition with a hooks array, of type "command" with a
// command. Gemini CLI runs it through the person's shell (bash -c on
// Linux, HookRunner.executeCommandHook), with their environment less
// what its sanitizer drops, the extension's settings added, in the
// session's folder, whatever security.toolSandboxing says.
type CommandHook struct {
	// Event is the event (BeforeTool, SessionStart...); Matcher and
	// Sequential are its definition's.
	Event      string
	Matcher    string
	Sequential bool
	// Name is the hook's name as written ("" when none); Command its
	// command as written, with none of the variables replaced.
	Name, Command string
	// Timeout is the hook's timeout in milliseconds, 0 when it sets none
	// (Gemini CLI's default is 60 s).
	Timeout int
	// Env is the hook's env as written.
	Env map[string]string
	// Label names the hook in gemkit: its name when it has one that is a
	// single word and unique among the extension's hooks, else its event
	// and its place among that event's command hooks (BeforeTool-2).
	Label string
}

// HookEvents are the events Gemini CLI 0.61 runs hooks for
// (HookEventName in packages/core/src/hooks/types.ts).
var HookEvents = []string{"BeforeTool", "AfterTool", "BeforeAgent", "Notification", "AfterAgent",
	"SessionStart", "SessionEnd", "PreCompress", "BeforeModel", "AfterModel", "BeforeToolSelection"}

// hookLabel is a name fit to be a hook's label: one word of letters,
// digits and . _ : -, which a shell takes as it is.
var hookLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`) })

// CommandHooks are the extension's command hooks in the order Gemini CLI
// registers them (events in the file's order, then definitions, then
// hooks); none when it has no hooks/hooks.json. A file Gemini CLI
// cannot read is an error.
func (e *Extension) CommandHooks() ([]CommandHook, error) {
	root, err := e.Root()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	raw, err := root.ReadFile(filepath.Join("hooks", "hooks.json"), maxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCommandHooks(raw)
}

func parseCommandHooks(raw []byte) ([]CommandHook, error) {
	var file struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("hooks/hooks.json: %w", err)
	}
	if len(file.Hooks) == 0 || file.Hooks[0] != '{' {
		return nil, errors.New(`hooks/hooks.json: "hooks" must be an object; Gemini CLI loads no hooks from it`)
	}
	events, err := orderedKeys(file.Hooks)
	if err != nil {
		return nil, fmt.Errorf("hooks/hooks.json: %w", err)
	}
	var byEvent map[string]json.RawMessage
	_ = json.Unmarshal(file.Hooks, &byEvent)
	var out []CommandHook
	for _, ev := range events {
		if !contains(HookEvents, ev) {
			continue
		}
		var defs []json.RawMessage
		if json.Unmarshal(byEvent[ev], &defs) != nil {
			continue
		}
		n := 0
		for _, d := range defs {
			var def struct {
				Matcher    any               `json:"matcher"`
				Sequential any               `json:"sequential"`
				Hooks      []json.RawMessage `json:"hooks"`
			}
			if json.Unmarshal(d, &def) != nil || def.Hooks == nil {
				continue
			}
			matcher, _ := def.Matcher.(string)
			seq, _ := def.Sequential.(bool)
			for _, h := range def.Hooks {
				var hk struct {
					Type    string            `json:"type"`
					Command string            `json:"command"`
					Name    string            `json:"name"`
					Timeout float64           `json:"timeout"`
					Env     map[string]string `json:"env"`
				}
				if json.Unmarshal(h, &hk) != nil || hk.Type != "command" || hk.Command == "" {
					continue
				}
				n++
				out = append(out, CommandHook{Event: ev, Matcher: matcher, Sequential: seq, Name: hk.Name,
					Command: hk.Command, Timeout: int(hk.Timeout), Env: hk.Env, Label: ev + "-" + strconv.Itoa(n)})
			}
		}
	}
	named := map[string]int{}
	for _, h := range out {
		if h.Name != "" {
			named[h.Name]++
		}
	}
	for i, h := range out {
		if h.Name != "" && named[h.Name] == 1 && hookLabel().MatchString(h.Name) && !contains(HookEvents, strings.SplitN(h.Name, "-", 2)[0]) {
			out[i].Label = h.Name
		}
	}
	return out, nil
}

// orderedKeys are the keys of the JSON object obj in the order written.
func orderedKeys(obj json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// Hydrated is s with the variables Gemini CLI replaces in an
// extension's hooks (recursivelyHydrateStrings with the extension's
// hydration context): ${extensionPath}, ${workspacePath}, ${/},
// ${pathSeparator} and the extension's settings by their variable.
func (h CommandHook) Hydrated(s string, vars Variables, settings map[string]string) string {
	return hydrate(s, vars, settings)
}

func hydrate(s string, vars Variables, settings map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return hydrateRef().ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if v, ok := vars.lookup(name); ok {
			return v
		}
		if v, ok := settings[name]; ok {
			return v
		}
		return ref
	})
}

// hydrateRef is Gemini CLI's hydrateString pattern, /\${(.*?)}/g.
var hydrateRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{.*?\}`) })

// settingsRef is what Gemini CLI's settings loader replaces in every
// string of a settings file with the value of an environment variable
// it has (resolveEnvVarsInString, packages/cli/src/config/
// environmentVariableResolver.ts): $NAME, ${NAME} and ${NAME:-default}.
var settingsRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(\w+|\{[^}]+?\})`) })

// DisableKey is the string of hooksConfig.disabled that keeps Gemini CLI
// from running h of the extension in dir, and "" with why when no
// string does so in every workspace: Gemini CLI matches the list
// against the hook's name, or, for a hook without one, its command as
// the extension's loader replaced its variables (HookRegistry.
// getHookName). A command that holds ${workspacePath} or one of the
// extension's settings reads differently in each workspace or holds a
// setting's value (a secret, maybe); and a string with a $NAME in it is
// replaced from Gemini CLI's environment when it reads its settings
// file, so it may no longer match.
func (h CommandHook) DisableKey(dir string, settings []Setting) (key, why string) {
	key = h.Name
	if key == "" {
		key = h.Command
		for _, ref := range hydrateRef().FindAllString(key, -1) {
			name := ref[2 : len(ref)-1]
			if name == "workspacePath" {
				return "", "its command holds ${workspacePath}, so it reads differently in each workspace, and it has no name"
			}
			for _, s := range settings {
				if s.EnvVar == name {
					return "", "its command holds the setting ${" + name + "}, whose value gemkit does not write into Gemini CLI's settings, and it has no name"
				}
			}
		}
		key = hydrate(key, Variables{ExtensionPath: dir}, nil)
	}
	if settingsRef().MatchString(key) {
		what := "its name"
		if h.Name == "" {
			what = "its command"
		}
		return "", what + " holds " + settingsRef().FindString(key) + ", which Gemini CLI replaces from its environment where it reads its settings file, so hooksConfig.disabled cannot name it for sure"
	}
	return key, ""
}

// ShellCommands are the extension's custom commands (commands/*.toml,
// as CustomCommands names them) whose prompt runs shell commands with
// !{...}: Gemini CLI's ShellProcessor runs each through its shell
// service (ShellExecutionService), in its own tool sandbox when
// security.toolSandboxing is on, else unconfined, after the person
// allows it (unless a policy or YOLO mode does).
func (e *Extension) ShellCommands() []string {
	root, err := e.Root()
	if err != nil {
		return nil
	}
	defer root.Close()
	var out []string
	root.Walk("commands", func(_ *fsutil.Root, p string, d fs.DirEntry) error {
		if d.IsDir() || filepath.Ext(p) != ".toml" {
			return nil
		}
		if b, err := root.ReadFile(filepath.Join("commands", p), maxSmallFile); err == nil && strings.Contains(string(b), "!{") {
			out = append(out, "/"+strings.ReplaceAll(strings.TrimSuffix(p, ".toml"), "/", ":"))
		}
		return nil
	})
	return out
}

// scriptExts are the names of files a skill's instructions have the
// model run.
var scriptExts = []string{".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1"}

// SkillScripts are the programs the extension's skills bring (files of
// skills/ that are executable or named as scripts), relative to the
// extension's folder: a skill's instructions have the model run them
// through Gemini CLI's shell tool, in its tool sandbox when
// security.toolSandboxing is on, else unconfined.
func (e *Extension) SkillScripts() []string {
	root, err := e.Root()
	if err != nil {
		return nil
	}
	defer root.Close()
	var out []string
	root.Walk("skills", func(_ *fsutil.Root, p string, d fs.DirEntry) error {
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		exec := false
		if fi, err := d.Info(); err == nil {
			exec = fi.Mode()&0o111 != 0
		}
		if exec || contains(scriptExts, filepath.Ext(p)) {
			out = append(out, filepath.Join("skills", p))
		}
		return nil
	})
	return out
}

// CodeSources are the parts of an extension besides its manifest that
// bring code Gemini CLI runs: its agents' servers, its command hooks,
// its custom commands with !{...} shell and its skills' scripts.
type CodeSources struct {
	Agents        []AgentServer
	Hooks         []CommandHook
	HooksErr      error
	ShellCommands []string
	SkillScripts  []string
}

// CodeSources reads them all through one Root of the extension's
// folder, for the workspace ws, and only the folders it has.
func (e *Extension) CodeSources(ws string) CodeSources {
	var cs CodeSources
	root, err := e.Root()
	if err != nil {
		return cs
	}
	entries, err := root.ReadDir(".")
	root.Close()
	if err != nil {
		return cs
	}
	for _, d := range entries {
		if !d.IsDir() {
			continue
		}
		switch d.Name() {
		case "agents":
			cs.Agents, _ = e.AgentServers(ws)
		case "hooks":
			cs.Hooks, cs.HooksErr = e.CommandHooks()
		case "commands":
			cs.ShellCommands = e.ShellCommands()
		case "skills":
			cs.SkillScripts = e.SkillScripts()
		}
	}
	return cs
}

// discardedHooks are, in words, the events and hooks of the hooks file
// raw that Gemini CLI 0.61 skips (HookRegistry.processHooksConfiguration
// and validateHookConfig): an event name it does not know, a hook whose
// type it does not know, a command hook without a command. None when
// the file cannot be read (CommandHooks says why).
func discardedHooks(raw []byte) []string {
	var file struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(raw, &file) != nil || len(file.Hooks) == 0 || file.Hooks[0] != '{' {
		return nil
	}
	events, err := orderedKeys(file.Hooks)
	if err != nil {
		return nil
	}
	var byEvent map[string]json.RawMessage
	_ = json.Unmarshal(file.Hooks, &byEvent)
	var out []string
	for _, ev := range events {
		switch {
		case contains(hookConfigFields, ev):
		case !contains(HookEvents, ev):
			out = append(out, fmt.Sprintf("event %q: not an event Gemini CLI knows", ev))
		default:
			out = append(out, discardedOf(ev, byEvent[ev])...)
		}
	}
	return out
}

// hookConfigFields are the keys Gemini CLI reads beside the events in a
// hooks object (HOOKS_CONFIG_FIELDS).
var hookConfigFields = []string{"enabled", "disabled", "notifications"}

// discardedOf are the hooks of the event ev's definitions defs that
// Gemini CLI skips, numbered as the event's hooks are written.
func discardedOf(ev string, defs json.RawMessage) []string {
	var ds []struct {
		Hooks []json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(defs, &ds) != nil {
		return nil
	}
	var out []string
	n := 0
	for _, d := range ds {
		for _, h := range d.Hooks {
			n++
			var hk struct {
				Type    any `json:"type"`
				Command any `json:"command"`
			}
			_ = json.Unmarshal(h, &hk)
			typ, _ := hk.Type.(string)
			cmd, _ := hk.Command.(string)
			switch {
			case !contains([]string{"command", "plugin", "runtime"}, typ):
				out = append(out, fmt.Sprintf("%s, hook %d: type %q is not command, plugin or runtime", ev, n, typ))
			case typ == "command" && cmd == "":
				out = append(out, fmt.Sprintf("%s, hook %d: a command hook without a command", ev, n))
			}
		}
	}
	return out
}

// DiscardedHooks are discardedHooks of the extension's hooks/hooks.json.
func (e *Extension) DiscardedHooks() []string {
	root, err := e.Root()
	if err != nil {
		return nil
	}
	defer root.Close()
	raw, err := root.ReadFile(filepath.Join("hooks", "hooks.json"), maxManifestBytes)
	if err != nil {
		return nil
	}
	return discardedHooks(raw)
}
