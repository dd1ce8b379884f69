package claudeswitch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Claude Code's user settings ($CLAUDE_CONFIG_DIR/settings.json, else
// ~/.claude/settings.json), as the switch edits them. Claude Code 2.1.330
// reads the file with JSON.parse; gemkit reads it the same way
// (agentread) and writes it as JSON.stringify(v, null, 2) would, keys in
// their order. Tried with the real Claude Code offline: a directory
// marketplace named in extraKnownMarketplaces and a plugin of it in
// enabledPlugins are loaded at the next start, in place, with no
// install and no prompt (it records the marketplace in
// plugins/known_marketplaces.json itself).

// Edit is what the switch of one plugin sets in the settings.
type Edit struct {
	// ID is the plugin (P@M), set false; Twin its twin (P@gemkit-sandbox),
	// set true.
	ID, Twin string
	// Deny are the server names to deny (plugin:P:S).
	Deny []string
	// Market is TM's path, named in extraKnownMarketplaces.
	Market string
}

// Prior is what the settings held before an Edit, which undoing it
// structurally gives back.
type Prior struct {
	// Enabled is enabledPlugins[ID] as it was (raw JSON), nil when absent.
	Enabled json.RawMessage `json:"enabled,omitempty"`
	// Denied are the names the edit added to deniedMcpServers.
	Denied []string `json:"denied,omitempty"`
	// Market: the edit added gemkit-sandbox to extraKnownMarketplaces.
	Market bool `json:"market,omitempty"`
	// Created are the top-level keys the edit made.
	Created []string `json:"created,omitempty"`
}

// readSettings reads the settings file at path as Claude Code does; a
// missing file is an empty object (missing true).
func readSettings(path string) (v agentread.Value, data []byte, missing bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		v, err = agentread.ParseJSON([]byte("{}"))
		return v, nil, true, err
	}
	if err != nil {
		return v, nil, false, err
	}
	if v, err = agentread.ParseJSON(data); err != nil {
		return v, nil, false, fmt.Errorf("%s cannot be read as Claude Code reads it: %w; fix it first", path, err)
	}
	if !v.IsObject() {
		return v, nil, false, fmt.Errorf("%s is a %s, not an object, as Claude Code reads it; fix it first", path, v.TypeOf())
	}
	return v, data, false, nil
}

// tree is a JSON object whose members are raw JSON, in order.
type tree []member

func treeOf(v agentread.Value) tree {
	var t tree
	for _, k := range v.Keys() {
		m, _ := v.Get(k)
		t = append(t, member{k, json.RawMessage(m.JSON(false))})
	}
	return t
}

func (t tree) get(k string) (json.RawMessage, bool) {
	for _, m := range t {
		if m.k == k {
			return m.v.(json.RawMessage), true
		}
	}
	return nil, false
}

func (t tree) set(k string, v any) tree {
	raw, _ := marshal(v)
	for i, m := range t {
		if m.k == k {
			t[i].v = json.RawMessage(raw)
			return t
		}
	}
	return append(t, member{k, json.RawMessage(raw)})
}

func (t tree) del(k string) tree {
	return slices.DeleteFunc(t, func(m member) bool { return m.k == k })
}

// sub is the object member k of t as a tree; ok is false when t has k
// and it is not an object, which the switch does not overwrite.
func (t tree) sub(k string) (tree, bool) {
	raw, has := t.get(k)
	if !has {
		return nil, true
	}
	v, err := agentread.ParseJSON(raw)
	if err != nil || !v.IsObject() {
		return nil, false
	}
	return treeOf(v), true
}

func (t tree) bytes() []byte {
	raw, _ := marshal(object(t))
	var b bytes.Buffer
	_ = json.Indent(&b, raw, "", "  ")
	b.WriteByte('\n')
	return b.Bytes()
}

// apply makes e in the settings v, returning the new bytes and what was
// there before.
func apply(path string, v agentread.Value, e Edit) ([]byte, Prior, error) {
	t := treeOf(v)
	var pr Prior
	had := func(k string) {
		if _, ok := t.get(k); !ok {
			pr.Created = append(pr.Created, k)
		}
	}
	enabled, ok := t.sub("enabledPlugins")
	if !ok {
		return nil, pr, fmt.Errorf("%s: enabledPlugins is not an object; fix it first", path)
	}
	pr.Enabled, _ = enabled.get(e.ID)
	had("enabledPlugins")
	t = t.set("enabledPlugins", object(enabled.set(e.ID, false).set(e.Twin, true)))
	markets, ok := t.sub("extraKnownMarketplaces")
	if !ok {
		return nil, pr, fmt.Errorf("%s: extraKnownMarketplaces is not an object; fix it first", path)
	}
	if _, has := markets.get(Marketplace); !has {
		pr.Market = true
	}
	had("extraKnownMarketplaces")
	src := object{{"source", object{{"source", "directory"}, {"path", e.Market}}}}
	t = t.set("extraKnownMarketplaces", object(markets.set(Marketplace, src)))
	denied, err := deniedOf(t, path)
	if err != nil {
		return nil, pr, err
	}
	had("deniedMcpServers")
	for _, n := range e.Deny {
		if !slices.ContainsFunc(denied, func(r json.RawMessage) bool { return deniesName(r, n) }) {
			raw, _ := json.Marshal(object{{"serverName", n}})
			denied = append(denied, raw)
			pr.Denied = append(pr.Denied, n)
		}
	}
	if len(denied) > 0 {
		t = t.set("deniedMcpServers", denied)
	} else if slices.Contains(pr.Created, "deniedMcpServers") {
		pr.Created = slices.DeleteFunc(pr.Created, func(k string) bool { return k == "deniedMcpServers" })
	}
	return t.bytes(), pr, nil
}

// deniedOf is t's deniedMcpServers, an array.
func deniedOf(t tree, path string) ([]json.RawMessage, error) {
	raw, has := t.get("deniedMcpServers")
	if !has {
		return nil, nil
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: deniedMcpServers is not an array; fix it first", path)
	}
	return out, nil
}

// deniesName reports whether the deniedMcpServers entry r is
// {"serverName": name}.
func deniesName(r json.RawMessage, name string) bool {
	var e map[string]any
	if json.Unmarshal(r, &e) != nil || len(e) != 1 {
		return false
	}
	return e["serverName"] == name
}

// undo takes e's edit out of the settings v structurally: the plugin's
// enablement as it was, the twin's gone, the denials it added gone, the
// marketplace gone when it added it and keepMarket is false, and the
// keys it made gone when left empty.
func undo(v agentread.Value, e Edit, pr Prior, keepMarket bool) []byte {
	t := treeOf(v)
	if enabled, ok := t.sub("enabledPlugins"); ok && enabled != nil {
		enabled = enabled.del(e.Twin)
		if pr.Enabled != nil {
			enabled = enabled.set(e.ID, pr.Enabled)
		} else {
			enabled = enabled.del(e.ID)
		}
		t = t.set("enabledPlugins", object(enabled))
	}
	if markets, ok := t.sub("extraKnownMarketplaces"); ok && markets != nil && pr.Market && !keepMarket {
		t = t.set("extraKnownMarketplaces", object(markets.del(Marketplace)))
	}
	if denied, err := deniedOf(t, ""); err == nil && denied != nil {
		denied = slices.DeleteFunc(denied, func(r json.RawMessage) bool {
			return slices.ContainsFunc(pr.Denied, func(n string) bool { return deniesName(r, n) })
		})
		t = t.set("deniedMcpServers", denied)
	}
	for _, k := range pr.Created {
		if raw, ok := t.get(k); ok && (string(raw) == "{}" || string(raw) == "[]" || string(raw) == "null") {
			t = t.del(k)
		}
	}
	return t.bytes()
}

// writeSettings writes data to the settings file at path atomically,
// keeping its mode; a new one is 0600, as Claude Code makes it.
func writeSettings(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return fsutil.ReplaceFile(path, data)
	}
	return fsutil.WriteFileAtomic(path, data, 0o600)
}

// UserConfig reads the values the person gave Claude Code for the
// plugin id's user_config keys: its user settings' pluginConfigs[id].options,
// each string, number or boolean as JavaScript's String makes it. A
// sensitive value Claude Code keeps in its credentials is not there,
// and a ${user_config.KEY} of it refuses the switch (Vars.expand).
func UserConfig(path, id string) (map[string]string, error) {
	v, _, _, err := readSettings(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	pc, _ := v.Get("pluginConfigs")
	c, _ := pc.Get(id)
	opts, _ := c.Get("options")
	for _, k := range opts.Keys() {
		o, _ := opts.Get(k)
		if s, ok := o.JSString(); ok && o.Kind() != agentread.Null && o.Kind() != agentread.Undefined {
			out[k] = s
		}
	}
	return out, nil
}
