package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// CommandHook is one hook of an extension's hooks/hooks.json that
// Gemini CLI 0.61 runs as a command (ExtensionManager.loadExtensionHooks
// in packages/cli/src/config/extension-manager.ts, HookRegistry in
// packages/core/src/hooks/hookRegistry.ts, HookRunner in hookRunner.ts):
// under an event name it knows, in a definition with a hooks array, of
// type "command", or "plugin" (which HookRunner.executeHook runs as a
// command too), with a command that is a string. Gemini CLI runs it
// through the person's shell (bash -c on Linux,
// HookRunner.executeCommandHook), with their environment less what its
// sanitizer drops, the extension's settings added, in the session's
// folder, whatever security.toolSandboxing says.
type CommandHook struct {
	// Event is the event (BeforeTool, SessionStart...); Matcher and
	// Sequential are its definition's (HookPlanner: a matcher that is
	// empty or * matches all; only sequential: true counts).
	Event      string
	Matcher    string
	Sequential bool
	// Type is "command" or "plugin".
	Type string
	// Name is the hook's name as written, when it is a string that is
	// not empty; NameWhy says why a name that is not a string cannot be
	// named in hooksConfig.disabled (Gemini CLI matches the list, strings,
	// against the value itself). Command is its command as written, with
	// none of the variables replaced.
	Name, NameWhy, Command string
	// Timeout is the hook's timeout in milliseconds as Gemini CLI's timer
	// takes it (a string of digits is a number, a value out of range is
	// 1 ms: Node's setTimeout), 0 when it sets none (Gemini CLI's default
	// is 60 s).
	Timeout int
	// Env is the hook's env, each value as JavaScript's String makes it.
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

// maxHooksBytes bounds the hooks file gemkit reads. Gemini CLI reads one
// of any size; past this bound the switch holds the extension, rather
// than say of a file it did not read that Gemini CLI runs none of it.
const maxHooksBytes = 64 << 20

// CommandHooks are the extension's command hooks in the order Gemini CLI
// registers them (events in the order JavaScript keeps the object's
// keys, then definitions, then hooks); none when it has no
// hooks/hooks.json. A file Gemini CLI cannot read is an error that
// says so; one gemkit cannot read as Gemini CLI does is an
// agentread.Unreadable error, for which the switch holds the extension.
func (e *Extension) CommandHooks() ([]CommandHook, error) {
	hooks, _, err := e.readHooks()
	return hooks, err
}

// readHooks reads hooks/hooks.json: its command hooks, and in words
// what of it Gemini CLI skips.
func (e *Extension) readHooks() (hooks []CommandHook, discarded []string, err error) {
	if e.IsPlugin() {
		return nil, nil, nil
	}
	root, err := e.Root()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	raw, err := root.ReadFile(filepath.Join("hooks", "hooks.json"), maxHooksBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if errors.Is(err, fsutil.ErrTooLarge) {
		return nil, nil, fmt.Errorf("hooks/hooks.json: %w", &agentread.Unreadable{Why: fmt.Sprintf("it is larger than the %d MiB gemkit reads, and Gemini CLI reads it whole", maxHooksBytes>>20)})
	}
	if err != nil {
		return nil, nil, err
	}
	return parseCommandHooks(raw)
}

// parseCommandHooks reads the hooks file raw as Gemini CLI 0.61 does:
// JSON.parse (agentread), a "hooks" member that is an object, the keys
// __proto__, constructor and prototype dropped at every level
// (recursivelyHydrateStrings' UNMARSHALL_KEY_IGNORE_LIST), then
// HookRegistry's checks.
func parseCommandHooks(raw []byte) (hooks []CommandHook, discarded []string, err error) {
	file, err := agentread.ParseJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("hooks/hooks.json: %w", err)
	}
	byEvent, ok := file.Get("hooks")
	if !ok || !byEvent.IsObject() {
		return nil, nil, errors.New(`hooks/hooks.json: "hooks" must be an object; Gemini CLI loads no hooks from it`)
	}
	for _, ev := range byEvent.Keys() {
		switch {
		case agentread.DroppedKey(ev) || contains(hookConfigFields, ev):
		case !contains(HookEvents, ev):
			discarded = append(discarded, fmt.Sprintf("event %q: not an event Gemini CLI knows", ev))
		default:
			defs, _ := byEvent.Get(ev)
			h, d, err := eventHooks(ev, defs)
			if err != nil {
				return nil, nil, fmt.Errorf("hooks/hooks.json: %w", err)
			}
			hooks, discarded = append(hooks, h...), append(discarded, d...)
		}
	}
	labelHooks(hooks)
	return hooks, discarded, nil
}

// eventHooks are the command hooks of the event ev's definitions, and in
// words the hooks Gemini CLI skips, numbered as written.
func eventHooks(ev string, defs agentread.Value) (hooks []CommandHook, discarded []string, err error) {
	list, ok := defs.Elems()
	if !ok {
		return nil, []string{fmt.Sprintf("event %q: its definitions are not an array", ev)}, nil
	}
	n, run := 0, 0
	for _, d := range list {
		hs, ok := member(d, "hooks").Elems()
		if !d.IsObject() || !ok {
			discarded = append(discarded, fmt.Sprintf("%s: a definition without a hooks array", ev))
			continue
		}
		matcher, seq, err := definitionOf(d)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ev, err)
		}
		for _, h := range hs {
			n++
			hook, why, err := commandHook(h)
			if errors.Is(err, errRuntimeHook) {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s, hook %d: %w", ev, n, err)
			}
			if why != "" {
				discarded = append(discarded, fmt.Sprintf("%s, hook %d: %s", ev, n, why))
				continue
			}
			run++
			hook.Event, hook.Matcher, hook.Sequential, hook.Label = ev, matcher, seq, ev+"-"+strconv.Itoa(run)
			hooks = append(hooks, hook)
		}
	}
	return hooks, discarded, nil
}

// member is v's own property key, when it is one Gemini CLI's hydration
// keeps; undefined otherwise.
func member(v agentread.Value, key string) agentread.Value {
	if agentread.DroppedKey(key) {
		return agentread.Value{}
	}
	m, _ := v.Get(key)
	return m
}

// definitionOf reads a definition's matcher (HookPlanner trims a truthy
// one and takes "" and * as all) and sequential (only true counts).
func definitionOf(d agentread.Value) (matcher string, seq bool, err error) {
	m := member(d, "matcher")
	if m.Truthy() {
		s, ok := m.Str()
		if !ok {
			return "", false, &agentread.Unreadable{Why: "a definition's matcher is " + m.Describe() + ", which Gemini CLI's planner cannot trim (it fails the event's hooks), and gemkit does not guess how"}
		}
		matcher = s
	}
	b, isBool := member(d, "sequential").Bool()
	return matcher, isBool && b, nil
}

// errRuntimeHook marks a hook Gemini CLI registers and cannot run: a
// runtime hook (whose action a file cannot give), a plugin hook without
// a command (HookRunner: "Command hook missing command").
var errRuntimeHook = errors.New("registered, runs nothing")

// commandHook reads one hook of a definition as HookRegistry and
// HookRunner take it. why says why Gemini CLI skips it: a type it does
// not know, a command hook without a command, a command that is not a
// string (HookRunner.expandCommand throws); errRuntimeHook a hook it
// keeps that runs nothing.
func commandHook(h agentread.Value) (hook CommandHook, why string, err error) {
	if !h.Truthy() || !h.IsObject() {
		return hook, "not an object", nil
	}
	typ, _ := member(h, "type").Str()
	cmd := member(h, "command")
	switch {
	case typ != "command" && typ != "plugin" && typ != "runtime":
		t := member(h, "type")
		if s, ok := t.Str(); ok {
			return hook, fmt.Sprintf("type %q is not command, plugin or runtime", s), nil
		}
		return hook, "its type, " + t.Describe() + ", is not command, plugin or runtime", nil
	case typ == "command" && !cmd.Truthy():
		return hook, "a command hook without a command", nil
	case typ == "runtime":
		// Registered, and run as a function a file cannot give: it
		// fails when its event comes, running nothing.
		return hook, "", errRuntimeHook
	}
	command, ok := cmd.Str()
	if !ok || command == "" {
		if typ == "plugin" && !cmd.Truthy() {
			return hook, "", errRuntimeHook
		}
		return hook, fmt.Sprintf("its command is %s, which Gemini CLI cannot run", cmd.Describe()), nil
	}
	hook = CommandHook{Type: typ, Command: command}
	if name := member(h, "name"); name.Truthy() {
		if s, ok := name.Str(); ok {
			hook.Name = s
		} else {
			hook.NameWhy = "its name is " + name.Describe() + ", which no string in hooksConfig.disabled matches"
		}
	}
	if hook.Timeout, err = hookTimeout(member(h, "timeout")); err != nil {
		return hook, "", err
	}
	hook.Env, err = hookEnv(member(h, "env"))
	return hook, "", err
}

// hookTimeout is the timeout Gemini CLI's timer takes: the value (none:
// Gemini CLI's default, 0 here) as a number (JavaScript's ToNumber, of
// which a string of digits is the usual), and 1 ms when that is not
// between 1 and 2^31-1 (Node's setTimeout).
func hookTimeout(v agentread.Value) (int, error) {
	var n float64
	switch v.Kind() {
	case agentread.Null, agentread.Undefined:
		return 0, nil
	case agentread.Number:
		n, _ = v.Num()
	case agentread.Bool:
		if b, _ := v.Bool(); b {
			n = 1
		}
	case agentread.String:
		s, _ := v.Str()
		var ok bool
		if n, ok = agentread.StringToNumber(s); !ok {
			return 0, &agentread.Unreadable{Why: fmt.Sprintf("a hook's timeout is the string %q, which gemkit cannot turn into a number as JavaScript does", s)}
		}
	default:
		return 0, &agentread.Unreadable{Why: "a hook's timeout is " + v.Describe()}
	}
	if !(n >= 1 && n <= math.MaxInt32) {
		return 1, nil
	}
	return int(n), nil
}

// hookEnv is a hook's env as the hook's process gets it: each value as
// JavaScript's String makes it.
func hookEnv(v agentread.Value) (map[string]string, error) {
	switch v.Kind() {
	case agentread.Null, agentread.Undefined:
		return nil, nil
	case agentread.Object:
	default:
		return nil, &agentread.Unreadable{Why: "a hook's env is " + v.Describe() + ", not an object"}
	}
	env := map[string]string{}
	for _, k := range v.Keys() {
		if agentread.DroppedKey(k) {
			continue
		}
		e, _ := v.Get(k)
		s, ok := e.JSString()
		if !ok {
			return nil, &agentread.Unreadable{Why: "the value of " + k + " in a hook's env is " + e.Describe()}
		}
		env[k] = s
	}
	return env, nil
}

// labelHooks gives each hook its name as label where the name is one
// word, unique among the extension's hooks and not an event's.
func labelHooks(hooks []CommandHook) {
	named := map[string]int{}
	for _, h := range hooks {
		if h.Name != "" {
			named[h.Name]++
		}
	}
	for i, h := range hooks {
		if h.Name != "" && named[h.Name] == 1 && hookLabel().MatchString(h.Name) && !contains(HookEvents, strings.SplitN(h.Name, "-", 2)[0]) {
			hooks[i].Label = h.Name
		}
	}
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
		// The hooks' context is {extensionPath, workspacePath, "/",
		// pathSeparator, ...customEnv}: a setting's variable of the same
		// name wins; then what every object inherits.
		if v, ok := settings[name]; ok {
			return v
		}
		if v, ok := vars.lookup(name); ok {
			return v
		}
		if v, ok := inherited(name); ok {
			return v
		}
		return ref
	})
}

// inherited is JavaScript's String of what a plain object inherits under
// name (context[key] in hydrateString reads through the prototype), as
// V8 writes it: ${constructor} is "function Object() { [native code] }".
func inherited(name string) (string, bool) {
	switch name {
	case "constructor":
		return "function Object() { [native code] }", true
	case "__proto__":
		return "[object Object]", true
	case "toString", "valueOf", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString",
		"__defineGetter__", "__defineSetter__", "__lookupGetter__", "__lookupSetter__":
		return "function " + name + "() { [native code] }", true
	}
	return "", false
}

// hydrateRef is Gemini CLI's hydrateString pattern, /\${(.*?)}/g, whose
// dot matches no line terminator.
var hydrateRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{[^\n\r\x{2028}\x{2029}]*?\}`) })

// settingsRef is what Gemini CLI's settings loader replaces in every
// string of a settings file with the value of an environment variable
// it has (resolveEnvVarsInString, packages/cli/src/config/
// environmentVariableResolver.ts): $NAME, ${NAME} and ${NAME:-default}.
var settingsRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(\w+|\{[^}]+?\})`) })

// DisableKey is the string of hooksConfig.disabled that keeps Gemini CLI
// from running h of the extension in dir, and "" with why when no
// string does so in every workspace: Gemini CLI matches the list
// against the hook's name, or, for a command hook without one, its
// command, as the extension's loader replaced its variables, and for a
// plugin hook without one "unknown-hook" (HookRegistry.getHookName). A
// name or command that holds ${workspacePath} or one of the extension's
// settings reads differently in each workspace or holds a setting's
// value (a secret, maybe); and a string with a $NAME in it is replaced
// from Gemini CLI's environment when it reads its settings file, so it
// may no longer match.
func (h CommandHook) DisableKey(dir string, settings []Setting) (key, why string) {
	if h.NameWhy != "" {
		return "", h.NameWhy
	}
	raw, what := h.Name, "its name"
	if raw == "" {
		if h.Type == "plugin" {
			return "unknown-hook", ""
		}
		raw, what = h.Command, "its command"
	}
	for _, ref := range hydrateRef().FindAllString(raw, -1) {
		name := ref[2 : len(ref)-1]
		for _, s := range settings {
			if s.EnvVar == name {
				return "", what + " holds the setting ${" + name + "}, whose value gemkit does not write into Gemini CLI's settings"
			}
		}
		if name == "workspacePath" {
			return "", what + " holds ${workspacePath}, so it reads differently in each workspace"
		}
	}
	key = hydrate(raw, Variables{ExtensionPath: dir}, nil)
	if settingsRef().MatchString(key) {
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
	if e.IsPlugin() {
		return nil
	}
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

// hookConfigFields are the keys Gemini CLI reads beside the events in a
// hooks object (HOOKS_CONFIG_FIELDS).
var hookConfigFields = []string{"enabled", "disabled", "notifications"}

// DiscardedHooks are, in words, the events and hooks of the extension's
// hooks/hooks.json that Gemini CLI 0.61 skips
// (HookRegistry.processHooksConfiguration and validateHookConfig, and
// HookRunner for a command that is not a string). None when the file
// cannot be read (CommandHooks says why).
func (e *Extension) DiscardedHooks() []string {
	_, discarded, err := e.readHooks()
	if err != nil {
		return nil
	}
	return discarded
}
