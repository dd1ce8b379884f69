package extension

import (
	"encoding/json"
	"fmt"

	"github.com/gemkit/gemkit/internal/agentread"
)

// geminiRefusals are the problems for which Gemini CLI 0.61 refuses to
// install the manifest data (its `extensions install` and `link` fail,
// and it skips such a folder at every start). Everything else in a
// manifest Gemini CLI installs, and so does gemkit, but what it cannot
// see as Gemini CLI does (unreadable, below). data is the manifest with
// its variables substituted, as JSON.parse reads it (each key once:
// parseManifest's reading).
//
// Gemini CLI's code (packages/cli/src/config/extension-manager.ts and
// extensions/consent.ts, in bundle/chunk-HPLZM7PQ.js):
//   - loadExtensionConfig: `!rawConfig.name || !rawConfig.version` fails
//     ("missing name"), by JavaScript's truthiness; then validateName
//     tests String(name) against /^[a-zA-Z0-9-]+$/ after the variables
//     are substituted.
//   - installOrUpdateExtension names the folder path.join(extensions
//     folder, name), which throws for a name that is not a string.
//   - extensionConsentString reads each mcpServers entry's fields: a
//     null entry throws (mcpServer.command), so does args, includeTools
//     or excludeTools that is truthy and not a list (.join), a string or
//     an object whose length is above 0 for the last two. loadExtension
//     throws on the null entry again (filterMcpConfig), at every start.
//   - getMissingSettings at install and loadExtension at every start
//     iterate settings (for...of) and read setting.envVar and
//     setting.sensitive: settings that is truthy and neither a list nor
//     a string, or that holds null, throws.
//
// unreadable is what gemkit cannot read as Gemini CLI does, "" when
// none: mcpServers given as a non-empty list, whose every element Gemini
// CLI starts as a server named by its index, where gemkit reads no
// server, so that a switch could not stop them. The caller holds the
// extension as for any text agentread cannot read.
func geminiRefusals(data []byte) (probs []Problem, unreadable string) {
	var name, version, servers, settings agentread.Value
	eachField(data, func(key string, raw json.RawMessage) {
		switch key {
		case "name":
			name = jsValue(raw)
		case "version":
			version = jsValue(raw)
		case "mcpServers":
			servers = jsValue(raw)
		case "settings":
			settings = jsValue(raw)
		}
	})
	var out []Problem
	add := func(path, msg, fix string) {
		out = append(out, Problem{Path: path, Message: msg, Fix: fix, Effect: EffectRefused})
	}
	nameFix := `give "name": a name of letters, digits and dashes, e.g. "my-extension"`
	if s, ok := name.Str(); ok && s != "" && !ValidName(s) {
		add("name", fmt.Sprintf("%q has characters other than letters, digits and dashes (Gemini CLI's validateName)", Printable(s)), fmt.Sprintf("rename it to %q", suggestName(s)))
	} else if !name.Truthy() {
		add("name", missing(name), nameFix)
	} else if !ok {
		add("name", fmt.Sprintf("is %s, not a string: Gemini CLI names the extension's folder by it, and fails", name.Describe()), nameFix)
	}
	if !version.Truthy() {
		add("version", missing(version), `add "version", e.g. "1.0.0"`)
	}
	if elems, ok := servers.Elems(); ok && len(elems) > 0 {
		unreadable = "its mcpServers is a list, whose every element Gemini CLI starts as a server named by its index, and gemkit reads no server there"
	}
	for _, p := range serverRefusals(servers) {
		add(p.Path, p.Message, p.Fix)
	}
	for _, p := range settingsRefusals(settings) {
		add(p.Path, p.Message, p.Fix)
	}
	return out, unreadable
}

// jsValue is raw as JSON.parse reads it; text it cannot read is a value
// none of the rules refuses (the decoders say what is wrong with it).
func jsValue(raw json.RawMessage) agentread.Value {
	v, err := agentread.ParseJSON(raw)
	if err != nil {
		return agentread.Value{}
	}
	return v
}

// missing says why a falsy name or version counts as missing.
func missing(v agentread.Value) string {
	if v.Kind() == agentread.Undefined {
		return "is missing: Gemini CLI refuses a manifest without it"
	}
	return fmt.Sprintf("is %s, which Gemini CLI takes for missing, and refuses", v.Describe())
}

// serverRefusals are the refusals of the mcpServers value v.
func serverRefusals(v agentread.Value) []Problem {
	var out []Problem
	for _, name := range v.Keys() {
		s, _ := v.Get(name)
		path := "mcpServers." + name
		if s.Kind() == agentread.Null {
			out = append(out, Problem{Path: path, Message: "is null: Gemini CLI fails on it at install, and skips the extension at every start",
				Fix: `describe the server as {"command": ..., "args": [...]} or {"httpUrl": ...}, or remove it`})
			continue
		}
		for _, key := range []string{"args", "includeTools", "excludeTools"} {
			f, _ := s.Get(key)
			if !f.Truthy() || f.Kind() == agentread.Array || key != "args" && !longerThanZero(f) {
				continue
			}
			out = append(out, Problem{Path: path + "." + key, Message: fmt.Sprintf("is %s, not a list: Gemini CLI fails on it at install (it joins the list)", f.Describe()),
				Fix: fmt.Sprintf(`write %s as a list of strings, e.g. ["a", "b"]`, key)})
		}
	}
	return out
}

// longerThanZero is JavaScript's `v.length > 0` for a value that is not
// a list: a non-empty string, or an object whose own length is a number
// above 0 (as true, or a string of one, compares).
func longerThanZero(v agentread.Value) bool {
	if s, ok := v.Str(); ok {
		return s != ""
	}
	l, _ := v.Get("length")
	switch l.Kind() {
	case agentread.Number:
		n, _ := l.Num()
		return n > 0
	case agentread.Bool:
		b, _ := l.Bool()
		return b
	case agentread.String:
		s, _ := l.Str()
		n, ok := agentread.StringToNumber(s)
		return ok && n > 0
	}
	return false
}

// settingsRefusals are the refusals of the settings value v.
func settingsRefusals(v agentread.Value) []Problem {
	fix := `write settings as a list of {"name": ..., "description": ..., "envVar": ...}`
	switch v.Kind() {
	case agentread.Undefined, agentread.Null, agentread.String:
		return nil
	case agentread.Array:
	default:
		if !v.Truthy() {
			return nil
		}
		return []Problem{{Path: "settings", Message: fmt.Sprintf("is %s, not a list: Gemini CLI fails on it at install, and skips the extension at every start", v.Describe()), Fix: fix}}
	}
	var out []Problem
	elems, _ := v.Elems()
	for i, e := range elems {
		if e.Kind() == agentread.Null {
			out = append(out, Problem{Path: fmt.Sprintf("settings[%d]", i), Message: "is null: Gemini CLI fails on it at install, and skips the extension at every start", Fix: fix})
		}
	}
	return out
}
