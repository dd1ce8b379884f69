package extension

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/gemkit/gemkit/internal/agentread"
)

// decodedUnknownKeys is unknownKeys as it was written first, finding the
// tools and servers by decoding the manifest again, now as JSON.parse
// reads it (agentread: exact keys, the last of two); the byte walk must
// find the same problems.
func decodedUnknownKeys(data []byte) []Problem {
	var probs []Problem
	add := func(path, key string, known []string, all bool) {
		limit := 2
		if !all {
			limit = 1
		}
		if s := nearest(key, known, limit); s != "" {
			probs = append(probs, Problem{Path: path + key, Message: "is not a known key, so it is ignored", Fix: fmt.Sprintf("rename it to %q", s)})
		} else if all {
			probs = append(probs, Problem{Path: path + key, Message: "is not a known key, so it is ignored",
				Fix: "remove it; the keys here are " + fmt.Sprint(known)})
		}
	}
	eachField(data, func(key string, _ json.RawMessage) {
		if !knownFields[key] {
			add("", key, sortedKnownFields(), false)
		}
	})
	var w struct {
		Tools      []json.RawMessage          `json:"tools"`
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	_ = agentread.Unmarshal(data, &w, false)
	for i, raw := range w.Tools {
		p := fmt.Sprintf("tools[%d].", i)
		eachField(raw, func(key string, val json.RawMessage) {
			if !slices.Contains(toolKeys, key) {
				add(p, key, toolKeys, true)
				return
			}
			if key != "args" {
				return
			}
			var args []json.RawMessage
			_ = json.Unmarshal(val, &args)
			for j, a := range args {
				ap := fmt.Sprintf("%sargs[%d].", p, j)
				eachField(a, func(k string, _ json.RawMessage) {
					if !slices.Contains(argKeys, k) {
						add(ap, k, argKeys, true)
					}
				})
			}
		})
	}
	for name, raw := range w.MCPServers {
		p := fmt.Sprintf("mcpServers.%s.", name)
		eachField(raw, func(key string, _ json.RawMessage) {
			if !slices.Contains(mcpServerKeys, key) {
				add(p, key, mcpServerKeys, false)
			}
		})
	}
	return probs
}

// problemPaths are the paths of probs, sorted (problems are sorted by
// path after unknownKeys, and the servers come in map order).
func problemPaths(probs []Problem) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Path)
	}
	sort.Strings(out)
	return out
}

// FuzzUnknownKeysMatchesDecoder: the byte walk of unknownKeys finds the
// keys that decoding finds, on manifests with repeated, null, mistyped
// and case-variant members ("Tools" is not tools: Gemini CLI reads no
// tool there, and gemkit none) (go test -fuzz explores further).
func FuzzUnknownKeysMatchesDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"name":"x","tools":[{"name":"t","timeout":5,"args":[{"name":"a","requried":true},{"nme":"b"}]}],"mcpServers":{"s":{"cwdd":"."}}}`,
		`{"tools":[{"tmeout":1}],"tools":[{"other":2}]}`,
		`{"tools":[{"a":1}],"tools":null}`,
		`{"tools":[{"a":1}],"tools":{"b":2}}`,
		`{"Tools":[{"a":1}],"MCPSERVERS":{"s":{"comand":"x"}}}`,
		`{"mcpServers":{"s":{"comand":"x"}},"mcpServers":{"t":{"ur":"y"}}}`,
		`{"mcpServers":{"s":{"comand":"x"}},"mcpServers":null,"mcpServers":{"t":{"ur":"y"}}}`,
		`{"tools":[1,"x",null,{"args":{"a":1}},{"args":[1,{"x":1}]}],"to\u006fls":[{"q":1}]}`,
		`{"excludTools":[],"hooks":{},"nme":"x"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(doc), &top) != nil || top == nil {
			return
		}
		// unknownKeys is given the manifest as Gemini CLI reads it,
		// each key once (parseManifest).
		v, err := agentread.ParseJSON([]byte(doc))
		if err != nil {
			return
		}
		data := v.JSON(true)
		got, want := problemPaths(unknownKeys(data)), problemPaths(decodedUnknownKeys(data))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", doc, got, want)
		}
	})
}

// BenchmarkUnknownKeys is the key check of the "tools" template's
// manifest, which every load of an extension runs after parsing it.
func BenchmarkUnknownKeys(b *testing.B) {
	data, err := templateFS.ReadFile("templates/tools/gemini-extension.json")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if probs := unknownKeys(data); len(probs) != 0 {
			b.Fatal(probs)
		}
	}
}
