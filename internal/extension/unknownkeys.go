package extension

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Keys of the objects gemkit's part of the manifest defines: a key beyond
// these is a mistake ("comand", "requried"), never a field of some other
// tool, so each one is a Problem.
var (
	toolKeys = []string{"name", "description", "executable", "runtime", "output", "outputSchema", "args"}
	argKeys  = []string{"name", "type", "description", "required", "default"}
	// mcpServerKeys are the fields of Gemini CLI's MCPServerConfig
	// (gemini-cli 0.61.0 packages/core/src/config/config.ts). Gemini CLI
	// owns that schema, so only a near miss of one of them is flagged.
	mcpServerKeys = []string{"command", "args", "env", "cwd", "url", "httpUrl", "headers", "tcp", "type", "timeout",
		"trust", "description", "includeTools", "excludeTools", "extensionName", "oauth", "authProviderType",
		"targetAudience", "targetServiceAccount"}
)

// unknownKeys finds the keys of data (a manifest) that nothing reads: any
// unknown key of a tool or of a tool's argument, and a key of the manifest
// or of an MCP server's definition that is a near miss of a known one
// (the rest may be Gemini CLI's, which gemkit keeps as they are). Values
// of the wrong type are ParseManifest's to report; they are skipped here.
// The manifest reader (decodeManifest) finds the same keys on its own
// pass; this walk is for the manifests it gives up on.
//
// data has been read by ParseManifest already, so it is valid JSON: the
// keys are found by walking its bytes (eachField, eachElement), which
// costs a fraction of decoding it again. The tools and servers looked at
// are those the Manifest is given (agentread's reading, as JSON.parse):
// the member named exactly "tools" or "mcpServers", the last one when
// there are several, and only when it is of the right kind (an array,
// an object); "Tools" is a key of its own, unknown.
func unknownKeys(data []byte) []Problem {
	var probs keyProblems
	var tools json.RawMessage
	var servers map[string]json.RawMessage
	eachField(data, func(key string, val json.RawMessage) {
		probs.top(key)
		switch {
		case key == "tools":
			tools = nil
			if val[0] == '[' {
				tools = val
			}
		case key == "mcpServers":
			servers = nil
			if val[0] == '{' {
				servers = map[string]json.RawMessage{}
				eachField(val, func(name string, def json.RawMessage) { servers[name] = def })
			}
		}
	})
	i := 0
	eachElement(tools, func(raw json.RawMessage) {
		eachField(raw, func(key string, val json.RawMessage) {
			if !slices.Contains(toolKeys, key) {
				probs.tool(i, key)
				return
			}
			if key != "args" {
				return
			}
			j := 0
			eachElement(val, func(a json.RawMessage) {
				eachField(a, func(k string, _ json.RawMessage) {
					if !slices.Contains(argKeys, k) {
						probs.arg(i, j, k)
					}
				})
				j++
			})
		})
		i++
	})
	probs.servers(servers)
	return probs
}

// keyProblems collects the problems of unknown keys, in the words of
// unknownKeys, for it and for the manifest reader.
type keyProblems []Problem

func (p *keyProblems) add(path, key string, known []string, all bool) {
	limit := 2
	if !all {
		// Keys of Gemini CLI's schema ("hooks") may sit near ours
		// ("tools"): only one edit away counts as a typo there.
		limit = 1
	}
	if s := nearest(key, known, limit); s != "" {
		*p = append(*p, Problem{Path: path + key, Message: "is not a known key, so it is ignored", Fix: fmt.Sprintf("rename it to %q", s)})
	} else if all {
		*p = append(*p, Problem{Path: path + key, Message: "is not a known key, so it is ignored",
			Fix: "remove it; the keys here are " + strings.Join(known, ", ")})
	}
}

// top checks a top-level key of the manifest.
func (p *keyProblems) top(key string) {
	if !knownFields[key] {
		p.add("", key, sortedKnownFields(), false)
	}
}

// tool notes key, not one of toolKeys, of tools[i].
func (p *keyProblems) tool(i int, key string) {
	p.add(fmt.Sprintf("tools[%d].", i), key, toolKeys, true)
}

// arg notes key, not one of argKeys, of tools[i].args[j].
func (p *keyProblems) arg(i, j int, key string) {
	p.add(fmt.Sprintf("tools[%d].args[%d].", i, j), key, argKeys, true)
}

// servers checks the keys of each MCP server's definition.
func (p *keyProblems) servers(servers map[string]json.RawMessage) {
	for name, raw := range servers {
		eachField(raw, func(key string, _ json.RawMessage) {
			if !slices.Contains(mcpServerKeys, key) {
				p.add(fmt.Sprintf("mcpServers.%s.", name), key, mcpServerKeys, false)
			}
		})
	}
}

// sortedKnownFields lists the top-level manifest fields, sorted, for the
// words of a problem.
func sortedKnownFields() []string {
	out := make([]string, 0, len(knownFields))
	for k := range knownFields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nearest returns the known key key is a typo of: the same but for case,
// or at most limit edits away (one for keys of up to four letters); ""
// when none is.
func nearest(key string, known []string, limit int) string {
	best, bestD := "", limit+1
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		l := limit
		if len(k) <= 4 {
			l = 1
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d <= l && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
