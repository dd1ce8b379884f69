package geminisettings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Keys gemkit may make to hold the hooks it switches, as Created names
// them besides KeyMCP and KeyExcluded: hooksConfig and its disabled
// list, hooks and each event's list (KeyHooks+"."+event).
const (
	KeyHooksConfig = "hooksConfig"
	KeyDisabled    = "hooksConfig.disabled"
	KeyHooks       = "hooks"
	// KeyFile names the file itself, made by an Apply that found none:
	// dropped, the file is removed once nothing but gemkit's "{}" is
	// left in it, so that undoing every switch leaves no file where
	// there was none.
	KeyFile = "(file)"
)

// HookDef is one hook definition gemkit adds to the user settings'
// hooks.<Event>: one command hook under the definition's matcher, run
// sequentially with the others when Sequential (Gemini CLI runs every
// hook of an event one after the other when any of them asks to,
// HookPlanner.createExecutionPlan in packages/core/src/hooks/
// hookPlanner.ts). Gemini CLI 0.61 runs the hooks of the settings
// files only in folders it trusts (HookRegistry.processHooksFromConfig,
// and again HookRunner.executeHook, for their source "project").
type HookDef struct {
	Event, Matcher string
	Sequential     bool
	Name, Command  string
	// Timeout in milliseconds; 0 leaves Gemini CLI's default (60 s).
	Timeout int
}

// json is the definition as written into the file, on one line, its
// keys in the order Gemini CLI's documentation writes them.
func (h HookDef) json() string {
	var b strings.Builder
	b.WriteString("{")
	if h.Matcher != "" {
		b.WriteString(`"matcher": ` + quote(h.Matcher) + ", ")
	}
	if h.Sequential {
		b.WriteString(`"sequential": true, `)
	}
	b.WriteString(`"hooks": [{`)
	if h.Name != "" {
		b.WriteString(`"name": ` + quote(h.Name) + ", ")
	}
	b.WriteString(`"type": "command", "command": ` + quote(h.Command))
	if h.Timeout > 0 {
		b.WriteString(`, "timeout": ` + strconv.Itoa(h.Timeout))
	}
	b.WriteString("}]}")
	return b.String()
}

// Edit is one change gemkit makes to the settings file, written at once.
type Edit struct {
	// Exclude and Include are names to add to and remove from
	// mcp.excluded.
	Exclude, Include []string
	// Disable and Enable are strings to add to and remove from
	// hooksConfig.disabled.
	Disable, Enable []string
	// AddHooks are hook definitions to add; RemoveHooks are the commands
	// whose definitions (one hook each, as AddHooks writes them) to
	// remove.
	AddHooks    []HookDef
	RemoveHooks []string
	// Drop are keys gemkit made (Created) to remove when left empty.
	Drop []string
	// Ours names the commands of gemkit's own hooks, whose definitions
	// the check before writing sets aside; nil: those of AddHooks and
	// RemoveHooks.
	Ours func(command string) bool
}

// Applied is what an Edit changed: the strings it added to and removed
// from each list, and the keys it made.
type Applied struct {
	Excluded, Included, Disabled, Enabled []string
	// Created are the keys it made, Dropped those of Edit.Drop it
	// removed.
	Created, Dropped []string
}

// Apply makes the edit e to the file at path, making the file when
// absent, and writes it atomically if it changed. Every byte besides
// the edit's is kept, comments included; strings already in a list are
// not added again, nor is a list gemkit did not make removed.
func Apply(path string, e Edit) (Applied, error) {
	data, err := os.ReadFile(path)
	absent := errors.Is(err, fs.ErrNotExist)
	if err != nil && !absent {
		return Applied{}, fmt.Errorf("read Gemini CLI's settings: %w", err)
	}
	if absent && len(e.Exclude) == 0 && len(e.Disable) == 0 && len(e.AddHooks) == 0 {
		// Nothing to add, and nothing to remove from no file.
		return Applied{}, nil
	}
	out, res, err := apply(path, data, e)
	if err != nil || bytes.Equal(out, data) {
		return res, err
	}
	if absent {
		res.Created = append(res.Created, KeyFile)
	}
	if slices.Contains(e.Drop, KeyFile) && string(out) == emptyFile {
		// Only a regular file: a link put there since is someone's.
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			if err := os.Remove(path); err != nil {
				return res, fmt.Errorf("remove Gemini CLI's settings, which gemkit made and left empty: %w", err)
			}
			res.Dropped = append(res.Dropped, KeyFile)
			return res, nil
		}
	}
	ours := e.Ours
	if ours == nil {
		var cmds []string
		for _, h := range e.AddHooks {
			cmds = append(cmds, h.Command)
		}
		cmds = append(cmds, e.RemoveHooks...)
		ours = func(c string) bool { return slices.Contains(cmds, c) }
	}
	return res, write(path, data, out, ours)
}

func apply(path string, data []byte, e Edit) (out []byte, res Applied, err error) {
	st, err := parse(path, data)
	if err != nil {
		return nil, res, err
	}
	out = data
	// Removals first, then additions: an edit that moves a string keeps
	// it.
	if out, res.Included, err = removeStrings(path, out, "mcp", "excluded", e.Include); err != nil {
		return nil, res, err
	}
	if out, res.Enabled, err = removeStrings(path, out, "hooksConfig", "disabled", e.Enable); err != nil {
		return nil, res, err
	}
	for _, ev := range eventsOf(out) {
		if out, err = removeElems(path, out, "hooks", ev, func(elem []byte) bool { return defCommandIn(elem, e.RemoveHooks) }); err != nil {
			return nil, res, err
		}
	}
	var made []string
	for _, n := range e.Exclude {
		if !slices.Contains(st.Excluded, n) && !slices.Contains(res.Excluded, n) {
			res.Excluded = append(res.Excluded, n)
		}
	}
	if out, made, err = addElems(path, out, "mcp", "excluded", quoted(res.Excluded)); err != nil {
		return nil, res, err
	}
	res.Created = append(res.Created, made...)
	for _, n := range e.Disable {
		if !slices.Contains(st.Disabled, n) && !slices.Contains(res.Disabled, n) {
			res.Disabled = append(res.Disabled, n)
		}
	}
	if out, made, err = addElems(path, out, "hooksConfig", "disabled", quoted(res.Disabled)); err != nil {
		return nil, res, err
	}
	res.Created = append(res.Created, made...)
	for _, h := range e.AddHooks {
		if !slices.Contains(e.RemoveHooks, h.Command) && slices.ContainsFunc(st.Hooks, func(s Hook) bool { return s.Command == h.Command && s.Event == h.Event }) {
			continue
		}
		if out, made, err = addElems(path, out, "hooks", h.Event, []string{h.json()}); err != nil {
			return nil, res, err
		}
		res.Created = append(res.Created, made...)
	}
	// Drop what gemkit made and the edit left empty: each event's list,
	// then the lists, then their objects.
	var drop []string
	for _, k := range e.Drop {
		if strings.Count(k, ".") == 1 {
			drop = append(drop, k)
		}
	}
	for _, k := range e.Drop {
		if !strings.Contains(k, ".") {
			drop = append(drop, k)
		}
	}
	for _, k := range drop {
		if next := dropEmpty(out, k); !bytes.Equal(next, out) {
			out = next
			res.Dropped = append(res.Dropped, k)
		}
	}
	return out, res, nil
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quote(n)
	}
	return out
}

// eventsOf are the keys of the hooks object of data.
func eventsOf(data []byte) []string {
	root, err := parseDocument(data)
	if err != nil {
		return nil
	}
	h := root.find("hooks")
	if h == nil {
		return nil
	}
	obj, _ := parseValue(data, h.val.start)
	var out []string
	for _, m := range obj.members {
		out = append(out, m.key)
	}
	return out
}

// defCommandIn reports whether the hook definition elem holds a hook
// whose command is one of cmds.
func defCommandIn(elem []byte, cmds []string) bool {
	if len(cmds) == 0 {
		return false
	}
	var def struct {
		Hooks []struct {
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if json.Unmarshal(stripComments(elem), &def) != nil {
		return false
	}
	for _, h := range def.Hooks {
		if slices.Contains(cmds, h.Command) {
			return true
		}
	}
	return false
}

// addElems adds elems (JSON texts) as the last elements of the array
// top.sub of the document data, making the file, the object top or the
// array when absent; it returns the keys it made.
func addElems(path string, data []byte, top, sub string, elems []string) (out []byte, created []string, err error) {
	if len(elems) == 0 {
		return data, nil, nil
	}
	list := strings.Join(elems, ", ")
	keyTop, keySub := top, top+"."+sub
	k, _ := json.Marshal(sub)
	if len(bytes.TrimSpace(data)) == 0 {
		t, _ := json.Marshal(top)
		return []byte("{\n  " + string(t) + ": {\n    " + string(k) + ": [" + list + "]\n  }\n}\n"), []string{keyTop, keySub}, nil
	}
	root, err := parseDocument(data)
	if err != nil {
		return nil, nil, readable(path, data, err)
	}
	m := root.find(top)
	if m == nil {
		return addMember(data, root, top, "{ "+string(k)+": ["+list+"] }"), []string{keyTop, keySub}, nil
	}
	obj, _ := parseValue(data, m.val.start)
	if obj.kind != '{' {
		return nil, nil, readable(path, data, &syntaxError{m.val.start, top + " is not an object, as Gemini CLI expects; fix it first"})
	}
	ex := obj.find(sub)
	if ex == nil && len(obj.members) == 0 {
		// Into an empty object, right after its brace, its own white
		// space kept: taking the member out again gives back its bytes.
		return splice(data, obj.open+1, obj.open+1, string(k)+": ["+list+"]"), []string{keySub}, nil
	}
	if ex == nil {
		return addMember(data, obj, sub, "["+list+"]"), []string{keySub}, nil
	}
	arr, _ := parseValue(data, ex.val.start)
	if arr.kind != '[' {
		return nil, nil, readable(path, data, &syntaxError{ex.val.start, keySub + " is not an array, as Gemini CLI expects; fix it first"})
	}
	if len(arr.elems) == 0 {
		return splice(data, arr.open+1, arr.closeOff, list), nil, nil
	}
	last := arr.elems[len(arr.elems)-1]
	return splice(data, last.end, last.end, ", "+list), nil, nil
}

// removeStrings removes the strings names from the array top.sub.
func removeStrings(path string, data []byte, top, sub string, names []string) (out []byte, removed []string, err error) {
	if len(names) == 0 {
		return data, nil, nil
	}
	out, err = removeElems(path, data, top, sub, func(elem []byte) bool {
		var s string
		if json.Unmarshal(elem, &s) == nil && slices.Contains(names, s) {
			removed = append(removed, s)
			return true
		}
		return false
	})
	return out, removed, err
}

// removeElems removes from the array top.sub every element match
// takes, with the comma that joins it to its neighbour.
func removeElems(path string, data []byte, top, sub string, match func(elem []byte) bool) ([]byte, error) {
	out := data
	for {
		root, err := parseDocument(out)
		if err != nil {
			return nil, readable(path, out, err)
		}
		arr, _ := arrayOf(out, root, top, sub)
		if arr.kind != '[' {
			return out, nil
		}
		i := slices.IndexFunc(arr.elems, func(e span) bool { return match(out[e.start:e.end]) })
		if i < 0 {
			return out, nil
		}
		out = removeAt(out, arr.elems, i)
	}
}

// emptyFile is a settings file gemkit made or emptied, once it holds
// nothing.
const emptyFile = "{}\n"

// dropEmpty removes the key k ("top" or "top.sub") of data when its
// value is an empty array or object.
func dropEmpty(data []byte, k string) []byte {
	root, err := parseDocument(data)
	if err != nil {
		return data
	}
	top, sub, nested := strings.Cut(k, ".")
	m := root.find(top)
	if m == nil {
		return data
	}
	obj, _ := parseValue(data, m.val.start)
	if !nested {
		if obj.kind == '{' && len(obj.members) == 0 || obj.kind == '[' && len(obj.elems) == 0 {
			i := slices.IndexFunc(root.members, func(mm member) bool { return mm.key == top })
			data = removeAt(data, memberSpans(root), i)
			// A file gemkit made, or an empty object it filled, is "{}"
			// again rather than braces around blank lines.
			if r, err := parseDocument(data); err == nil && len(r.members) == 0 && len(bytes.TrimSpace(data[r.open+1:r.closeOff])) == 0 {
				data = []byte(emptyFile)
			}
		}
		return data
	}
	if obj.kind != '{' {
		return data
	}
	sm := obj.find(sub)
	if sm == nil {
		return data
	}
	v, _ := parseValue(data, sm.val.start)
	if v.kind == '[' && len(v.elems) == 0 || v.kind == '{' && len(v.members) == 0 {
		i := slices.IndexFunc(obj.members, func(mm member) bool { return mm.key == sub })
		data = removeAt(data, memberSpans(obj), i)
	}
	return data
}

// arrayOf finds top.sub in the document root: the array and the top
// object (each of kind 0 when there is none).
func arrayOf(data []byte, root node, top, sub string) (arr, obj node) {
	m := root.find(top)
	if m == nil {
		return node{}, node{}
	}
	obj, _ = parseValue(data, m.val.start)
	if obj.kind != '{' {
		return node{}, node{}
	}
	ex := obj.find(sub)
	if ex == nil {
		return node{}, obj
	}
	arr, _ = parseValue(data, ex.val.start)
	return arr, obj
}
