package extview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteHooks prints each hook event with its matchers and commands, the
// paths resolved as Gemini CLI runs them.
func WriteHooks(w io.Writer, hooks json.RawMessage, hooksErr string) {
	if hooksErr != "" {
		fmt.Fprintf(w, "  unreadable: %s\n", hooksErr)
		return
	}
	var events map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(hooks, &events); err != nil {
		var buf bytes.Buffer
		json.Compact(&buf, hooks)
		fmt.Fprintf(w, "  %s\n", buf.String())
		return
	}
	for _, ev := range sortedKeys(events) {
		for _, def := range events[ev] {
			match := ""
			if def.Matcher != "" {
				match = " (" + def.Matcher + ")"
			}
			for _, h := range def.Hooks {
				fmt.Fprintf(w, "  %s%s: %s %s\n", ev, match, h.Type, h.Command)
			}
		}
	}
}

// WriteMCPDetails prints the parts of an MCP server definition that its
// summary line leaves out: the working folder, the names (not the values,
// which may be secrets) of its environment variables and headers, and any
// other setting as written.
func WriteMCPDetails(w io.Writer, raw json.RawMessage) {
	var def map[string]json.RawMessage
	if json.Unmarshal(raw, &def) != nil {
		return
	}
	for _, k := range SortedNames(def) {
		switch k {
		case "command", "args", "url", "httpUrl", "tcp":
			continue
		case "env", "headers":
			var m map[string]json.RawMessage
			if json.Unmarshal(def[k], &m) == nil {
				fmt.Fprintf(w, "      %s: %s\n", k, strings.Join(SortedNames(m), ", "))
				continue
			}
		case "cwd":
			var s string
			if json.Unmarshal(def[k], &s) == nil {
				fmt.Fprintf(w, "      cwd: %s\n", s)
				continue
			}
		}
		var buf bytes.Buffer
		if json.Compact(&buf, def[k]) == nil {
			fmt.Fprintf(w, "      %s: %s\n", k, buf.String())
		}
	}
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
