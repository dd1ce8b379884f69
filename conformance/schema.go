package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
)

// ContextProblems lists the ways the params of an ide/contextUpdate break the
// real client's schema (gemini-cli 0.61.0 packages/core/src/ide/types.ts).
// The real client's schema rejects null for every optional field, and a
// rejected notification flips it to "disconnected" while the HTTP connection
// stays up, so each problem here is one that breaks a real CLI.
func ContextProblems(params json.RawMessage) []string {
	var p []string
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil || top == nil {
		return []string{"params is not a JSON object"}
	}
	ws, ok := top["workspaceState"]
	if !ok {
		return nil
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(ws, &state); err != nil || state == nil {
		return []string{"workspaceState is not an object (null is refused)"}
	}
	if t, ok := state["isTrusted"]; ok && kind(t) != "boolean" {
		p = append(p, "workspaceState.isTrusted is "+kind(t)+", not a boolean")
	}
	files, ok := state["openFiles"]
	if !ok {
		return p
	}
	var list []json.RawMessage
	if kind(files) != "array" || json.Unmarshal(files, &list) != nil {
		return append(p, "workspaceState.openFiles is "+kind(files)+", not an array")
	}
	for i, f := range list {
		at := fmt.Sprintf("openFiles[%d]", i)
		var file map[string]json.RawMessage
		if json.Unmarshal(f, &file) != nil || file == nil {
			p = append(p, at+" is not an object")
			continue
		}
		p = append(p, requireKind(file, at, "path", "string", true)...)
		p = append(p, requireKind(file, at, "timestamp", "number", true)...)
		p = append(p, requireKind(file, at, "isActive", "boolean", false)...)
		p = append(p, requireKind(file, at, "selectedText", "string", false)...)
		if c, ok := file["cursor"]; ok {
			var cur map[string]json.RawMessage
			if json.Unmarshal(c, &cur) != nil || cur == nil {
				p = append(p, at+".cursor is "+kind(c)+", not an object")
			} else {
				p = append(p, requireKind(cur, at+".cursor", "line", "number", true)...)
				p = append(p, requireKind(cur, at+".cursor", "character", "number", true)...)
			}
		}
	}
	return p
}

// DiffNotificationProblems checks ide/diffAccepted (withContent) or
// ide/diffRejected params against the real client's schema
// (IdeDiffAcceptedNotificationSchema and IdeDiffRejectedNotificationSchema in
// gemini-cli 0.61.0 packages/core/src/ide/types.ts).
func DiffNotificationProblems(params json.RawMessage, withContent bool) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil || m == nil {
		return []string{"params is not a JSON object"}
	}
	p := requireKind(m, "params", "filePath", "string", true)
	if withContent {
		p = append(p, requireKind(m, "params", "content", "string", true)...)
	}
	return p
}

func requireKind(m map[string]json.RawMessage, at, key, want string, required bool) []string {
	v, ok := m[key]
	if !ok {
		if required {
			return []string{fmt.Sprintf("%s.%s is missing", at, key)}
		}
		return nil
	}
	if k := kind(v); k != want {
		return []string{fmt.Sprintf("%s.%s is %s, not a %s", at, key, k, want)}
	}
	return nil
}

// kind names the JSON type of v as JavaScript's typeof would, with null
// and array told apart.
func kind(v json.RawMessage) string {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return "invalid JSON"
	}
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// SchemaProblems checks a tool's input schema: an object schema whose
// properties include each of the given string fields, required where
// asked.
func SchemaProblems(schema json.RawMessage, required, optional map[string]string) []string {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return []string{"inputSchema is not a JSON object"}
	}
	var p []string
	if s.Type != "object" {
		p = append(p, fmt.Sprintf("inputSchema.type is %q, not \"object\"", s.Type))
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	check := func(name, typ string, mustRequire bool) {
		raw, ok := s.Properties[name]
		if !ok {
			if mustRequire {
				p = append(p, fmt.Sprintf("property %q is missing", name))
			}
			return
		}
		var prop struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(raw, &prop)
		if t, _ := prop.Type.(string); t != typ {
			p = append(p, fmt.Sprintf("property %q has type %v, not %q", name, prop.Type, typ))
		}
		if mustRequire && !req[name] {
			p = append(p, fmt.Sprintf("property %q is not required", name))
		}
	}
	for _, name := range sortedKeys(required) {
		check(name, required[name], true)
	}
	for _, name := range sortedKeys(optional) {
		check(name, optional[name], false)
	}
	return p
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
