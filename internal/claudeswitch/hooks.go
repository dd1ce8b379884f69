package claudeswitch

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// geminiEvents are the hook events of Claude Code 2.1.330 the twin
// extension's hooks/hooks.json files under, each under the event of
// Gemini CLI 0.61 that is its counterpart (extension.HookEvents), so
// that the extension switch and gemkit's hook runner read the hook as
// any extension's. The twin plugin keeps the Claude Code event; a hook
// on an event not here refuses the switch.
var geminiEvents = map[string]string{
	"PreToolUse": "BeforeTool", "PostToolUse": "AfterTool", "UserPromptSubmit": "BeforeAgent",
	"Stop": "AfterAgent", "SessionStart": "SessionStart", "SessionEnd": "SessionEnd",
	"Notification": "Notification", "PreCompact": "PreCompress",
}

// hookKeys and groupKeys are the keys of a command hook and of its
// matcher group gemkit converts; any other refuses the switch (among
// them Claude Code 2.1.330's args, its exec form, and shell, which change
// how the command runs). hookOwnKeys are those Claude Code acts on
// around the command, whatever runs it (when to run it, what its
// failure does, what the person sees): the twin plugin's hook keeps
// them as they are.
var (
	hookOwnKeys = []string{"if", "once", "async", "onFailure", "statusMessage"}
	hookKeys    = append([]string{"type", "command", "timeout"}, hookOwnKeys...)
	groupKeys   = []string{"matcher", "hooks"}
)

// hooks converts the plugin's hooks (hooks/hooks.json, or the
// manifest's): each command hook, labelled EVENT-N (its place among its
// event's), goes into the twin extension's hooks/hooks.json under its
// Gemini CLI event, and the twin plugin's hooks/hooks.json runs it
// through gemkit's hook runner on the Claude Code event and matcher.
func (t *Twin) hooks(r *fsutil.Root, man agentread.Value, in Input) error {
	maps, err := claudeplugin.HookMaps(r, man)
	if err != nil {
		return err
	}
	// The sources add to one another (claudeplugin.HookMaps): an event's
	// groups are gathered in their order, its hooks counted across them.
	var events []string
	ext, plug, count := map[string][]object{}, map[string][]object{}, map[string]*int{}
	for _, src := range maps {
		w, where := src.Value, src.Where
		if !w.IsObject() {
			return fmt.Errorf("%s: hooks are a %s, not an object", where, w.TypeOf())
		}
		for _, ev := range w.Keys() {
			if _, known := geminiEvents[ev]; !known {
				return fmt.Errorf("%s: hooks on %s, which gemkit does not run (it runs %s): not switched", where, extension.Printable(ev), eventList())
			}
			groups, _ := w.Get(ev)
			els, isArr := groups.Elems()
			if !isArr {
				return fmt.Errorf("%s: %s is a %s, not an array", where, ev, groups.TypeOf())
			}
			if count[ev] == nil {
				count[ev] = new(int)
				events = append(events, ev)
			}
			for _, g := range els {
				e, p, err := t.group(g, ev, count[ev], where, in)
				if err != nil {
					return err
				}
				ext[ev], plug[ev] = append(ext[ev], e), append(plug[ev], p)
			}
		}
	}
	if len(t.Hooks) == 0 {
		return nil
	}
	var eo, po object
	for _, ev := range events {
		eo = append(eo, member{geminiEvents[ev], ext[ev]})
		po = append(po, member{ev, plug[ev]})
	}
	t.Extension["hooks/hooks.json"] = object{{"hooks", eo}}.indent()
	t.Plugin["hooks/hooks.json"] = object{{"hooks", po}}.indent()
	return nil
}

// group converts one matcher group of the event ev; n counts the
// event's hooks, for their labels.
func (t *Twin) group(g agentread.Value, ev string, n *int, where string, in Input) (ext, plug object, err error) {
	at := where + ": " + ev
	if !g.IsObject() {
		return nil, nil, fmt.Errorf("%s: a %s, not an object", at, g.TypeOf())
	}
	if k := unknownKey(g, groupKeys); k != "" {
		return nil, nil, fmt.Errorf("%s has %q, which gemkit does not convert: not switched", at, extension.Printable(k))
	}
	if m, ok := g.Get("matcher"); ok {
		s, isStr := m.Str()
		if !isStr {
			return nil, nil, fmt.Errorf("%s: its matcher is a %s, not a string", at, m.TypeOf())
		}
		if own := ownToolsWord(in.Plugin); strings.Contains(s, own) {
			return nil, nil, fmt.Errorf("%s: its matcher %q names the plugin's own MCP tools (%s…), which Claude Code names %s… once they are the twin's: the hook would no longer match them, so it is not switched", at, extension.Printable(s), "mcp__"+own, toolPrefix(in.Plugin))
		}
		ext, plug = object{{"matcher", s}}, object{{"matcher", s}}
	}
	hs, _ := g.Get("hooks")
	els, ok := hs.Elems()
	if !ok {
		return nil, nil, fmt.Errorf("%s: its hooks are a %s, not an array", at, hs.TypeOf())
	}
	var eh, ph []object
	for _, h := range els {
		*n++
		label := ev + "-" + strconv.Itoa(*n)
		e, p, err := hook(h, label, at, in, t.Name)
		if err != nil {
			return nil, nil, err
		}
		eh, ph = append(eh, e), append(ph, p)
		t.Hooks = append(t.Hooks, label)
	}
	return append(ext, member{"hooks", eh}), append(plug, member{"hooks", ph}), nil
}

// hook converts one hook: a command hook, its variables expanded and
// its timeout (Claude Code's seconds) made milliseconds for the twin
// extension; the twin plugin's runs gemkit's hook runner for label.
func hook(h agentread.Value, label, at string, in Input, x string) (ext, plug object, err error) {
	at += " hook " + label
	if !h.IsObject() {
		return nil, nil, fmt.Errorf("%s: a %s, not an object", at, h.TypeOf())
	}
	typ, _ := h.Get("type")
	if s, _ := typ.Str(); s != "command" {
		return nil, nil, fmt.Errorf("%s: of type %s: gemkit runs command hooks only, and a hook of another type (http, prompt, agent) would stay with the plugin: not switched", at, extension.Printable(string(typ.JSON(false))))
	}
	if k := unknownKey(h, hookKeys); k != "" {
		return nil, nil, fmt.Errorf("%s has %q, which gemkit does not convert: not switched", at, extension.Printable(k))
	}
	c, _ := h.Get("command")
	cmd, isStr := c.Str()
	if !isStr || strings.TrimSpace(cmd) == "" {
		return nil, nil, fmt.Errorf("%s: its command is not a string that is not empty", at)
	}
	if cmd, err = in.Vars.expand(cmd, at, true); err != nil {
		return nil, nil, err
	}
	ext = object{{"name", label}, {"type", "command"}, {"command", cmd}}
	plug = object{{"type", "command"}, {"command", runner(in, "extensions", "hook", "--home", in.Home, x, label, "--agent", "claude")}}
	if tv, ok := h.Get("timeout"); ok {
		secs, isNum := tv.Num()
		if !isNum || secs <= 0 || secs > math.MaxInt32/1000 {
			return nil, nil, fmt.Errorf("%s: its timeout %s is not a number of seconds gemkit converts", at, extension.Printable(string(tv.JSON(false))))
		}
		ext = append(ext, member{"timeout", int(math.Ceil(secs * 1000))})
		plug = append(plug, member{"timeout", json.RawMessage(tv.JSON(false))})
	}
	for _, k := range hookOwnKeys {
		if v, ok := h.Get(k); ok {
			plug = append(plug, member{k, json.RawMessage(v.JSON(false))})
		}
	}
	return ext, plug, nil
}

// unknownKey is the first key of v not in known, "" when none.
func unknownKey(v agentread.Value, known []string) string {
	for _, k := range v.Keys() {
		if !slices.Contains(known, k) {
			return k
		}
	}
	return ""
}

func eventList() string {
	var out []string
	for k := range geminiEvents {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// lsp writes the twin plugin's .lsp.json: each of the plugin's LSP
// servers (its .lsp.json, or the manifest's lspServers) as it is, but
// its command gemkit's runner of that server in the sandbox.
func (t *Twin) lsp(r *fsutil.Root, man agentread.Value, in Input) error {
	v, where, ok, err := claudeplugin.Component(r, man, "lspServers", ".lsp.json")
	if !ok || err != nil {
		return err
	}
	if !v.IsObject() {
		return fmt.Errorf("%s: a %s, not an object", where, v.TypeOf())
	}
	var out object
	for _, name := range v.Keys() {
		s, _ := v.Get(name)
		if !s.IsObject() {
			return fmt.Errorf("%s: the LSP server %s is a %s, not an object", where, extension.Printable(name), s.TypeOf())
		}
		e := object{{"command", in.Gemkit}, {"args", []string{"plugins", "part", "--home", in.Home, t.Name, "lsp", name}}}
		for _, k := range s.Keys() {
			if k != "command" && k != "args" && k != "env" {
				val, _ := s.Get(k)
				e = append(e, member{k, json.RawMessage(val.JSON(false))})
			}
		}
		out = append(out, member{name, e})
		t.LSP = append(t.LSP, name)
	}
	if len(out) > 0 {
		t.Plugin[".lsp.json"] = out.indent()
	}
	return nil
}

// monitors writes the twin plugin's monitors/monitors.json: each of the
// plugin's monitors, its command gemkit's runner of it in the sandbox.
func (t *Twin) monitors(r *fsutil.Root, man agentread.Value, in Input) error {
	var v agentread.Value
	where, ok := "plugin.json experimental.monitors", false
	if ex, has := man.Get("experimental"); has {
		v, ok = ex.Get("monitors")
	}
	if !ok {
		var err error
		if v, where, ok, err = claudeplugin.Component(r, man, "monitors", "monitors/monitors.json"); !ok || err != nil {
			return err
		}
	}
	els, isArr := v.Elems()
	if !isArr {
		return fmt.Errorf("%s: a %s, not an array", where, v.TypeOf())
	}
	var out []object
	for _, m := range els {
		n, _ := m.Get("name")
		name, isStr := n.Str()
		if !m.IsObject() || !isStr || name == "" || slices.Contains(t.Monitors, name) {
			return fmt.Errorf("%s: a monitor without a name of its own", where)
		}
		e := object{{"name", name}, {"command", runner(in, "plugins", "part", "--home", in.Home, t.Name, "monitor", name)}}
		for _, k := range m.Keys() {
			if k != "name" && k != "command" && k != "env" {
				val, _ := m.Get(k)
				e = append(e, member{k, json.RawMessage(val.JSON(false))})
			}
		}
		out = append(out, e)
		t.Monitors = append(t.Monitors, name)
	}
	if len(out) > 0 {
		b, _ := json.MarshalIndent(out, "", "  ")
		t.Plugin["monitors/monitors.json"] = append(b, '\n')
	}
	return nil
}

// ownToolsWord is what a matcher holds to name the plugin's own MCP
// tools: Claude Code 2.1.330 names them mcp__plugin_<plugin>_<server>__<tool>,
// the plugin's name with each character but letters, digits, _ and -
// made _ (toolPrefix).
func ownToolsWord(plugin string) string {
	p := strings.TrimPrefix(toolPrefix(plugin), "mcp__")
	return strings.TrimSuffix(p, "_"+ServerName+"__") + "_"
}
