package extension

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// Validate checks a manifest whose folder is dir (a real path) and returns
// every problem, sorted by path. Fields that old manifests do not have are
// only checked when present, so every manifest Gemini CLI accepts passes.
func Validate(dir string, m *Manifest) []Problem {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return []Problem{{Message: fmt.Sprintf("the extension folder cannot be opened: %v", err), Fix: "give the folder that holds " + ManifestFile}}
	}
	defer root.Close()
	return validateIn(root, m)
}

// validateIn is Validate of the extension whose folder is open as root:
// the files the manifest names are looked at through it.
func validateIn(root *fsutil.Root, m *Manifest) []Problem {
	v := &validator{dir: root.Dir(), root: root}
	defer v.close()
	v.top(m)
	v.permissions(m.Permissions)
	v.tools(m)
	v.docs(m.Docs)
	v.examples(m)
	v.mcpServers(m.MCPServers)
	v.settings(m.Settings)
	v.themes(m.Themes)
	v.plan(m.Plan)
	sortProblems(v.probs)
	return withEffects(v.probs)
}

type validator struct {
	dir   string
	root  *fsutil.Root
	probs []Problem
	// seen caches Lstat of folders on the way to files, and folders the
	// folders among them, opened: several tools usually share tools/,
	// whose files are then looked at with one system call each (through
	// the extension's Root, a name of two components took four).
	seen    map[string]fs.FileInfo
	folders map[string]*fsutil.Root
}

func (v *validator) add(path, msg, fix string, args ...any) {
	v.probs = append(v.probs, Problem{Path: path, Message: msg, Fix: fmt.Sprintf(fix, args...)})
}

// refuse adds a problem for which Gemini CLI refuses the manifest too.
func (v *validator) refuse(path, msg, fix string) {
	v.probs = append(v.probs, Problem{Path: path, Message: msg, Fix: fix, Effect: EffectRefused})
}

// top checks the name and version as Gemini CLI does (geminiRefusals,
// which Load asks first, says the same in its words), and the context
// files and excluded tools.
func (v *validator) top(m *Manifest) {
	switch {
	case m.Name == "":
		v.refuse("name", "is missing", "add \"name\": a name of letters, digits and dashes, e.g. \"my-extension\"")
	case !ValidName(m.Name):
		v.refuse("name", fmt.Sprintf("%q has characters other than letters, digits and dashes", m.Name),
			fmt.Sprintf("rename it to %q", suggestName(m.Name)))
	}
	if m.Version == "" {
		v.refuse("version", "is missing", "add \"version\", e.g. \"1.0.0\"")
	}
	for i, f := range m.ContextFileName {
		p := fmt.Sprintf("contextFileName[%d]", i)
		if m.contextFileNameString {
			p = "contextFileName"
		}
		if f == "" {
			v.add(p, "is empty", "give a file name such as \"GEMINI.md\"")
			continue
		}
		if _, err := v.inside(f); err != nil {
			v.add(p, fmt.Sprintf("%q %v", f, err), "give a path inside the extension folder, e.g. \"GEMINI.md\"")
		}
	}
	for i, t := range m.ExcludeTools {
		if strings.TrimSpace(t) == "" {
			v.add(fmt.Sprintf("excludeTools[%d]", i), "is empty", "remove it or name a tool, e.g. \"run_shell_command(rm -rf)\"")
		}
	}
}

func (v *validator) permissions(p *Permissions) {
	if p == nil {
		return
	}
	if fsp := p.Filesystem; fsp != nil {
		ok := true
		for _, f := range []struct {
			name string
			a    Access
		}{{"read", fsp.Read}, {"write", fsp.Write}} {
			if f.a.Rank() < 0 {
				ok = false
				v.add("permissions.filesystem."+f.name, fmt.Sprintf("%q is not a scope", f.a),
					"use one of \"none\", \"workspace\", \"home\", \"full\"")
			}
		}
		if ok && fsp.Write.Rank() > fsp.Read.Rank() {
			v.add("permissions.filesystem.write",
				fmt.Sprintf("%q is wider than the read scope %q: a tool could write files it may not read", fsp.Write.Effective(), fsp.Read.Effective()),
				"set permissions.filesystem.read to %q (or wider), or narrow write to %q", fsp.Write.Effective(), fsp.Read.Effective())
		}
		if len(fsp.ProtectedWrites) > 0 && ok && fsp.Write.Rank() < AccessWorkspace.Rank() {
			v.add("permissions.filesystem.protectedWrites",
				fmt.Sprintf("names protected paths to write, but the write scope is %q", fsp.Write.Effective()),
				"set permissions.filesystem.write to \"workspace\" (or wider), or remove protectedWrites")
		}
		seen := map[string]int{}
		for i, n := range fsp.ProtectedWrites {
			path := fmt.Sprintf("permissions.filesystem.protectedWrites[%d]", i)
			if err := permission.CheckLiftable(n); err != nil {
				fix := "name a protected file or folder at the workspace's top that the tools must write, e.g. \".husky\" or \".env.local\""
				if permission.ProtectedName(n) {
					fix = "remove it: no manifest may let its tools write it"
				}
				v.add(path, fmt.Sprintf("%q %v", n, err), "%s", fix)
				continue
			}
			if j, dup := seen[n]; dup {
				v.add(path, fmt.Sprintf("%q repeats protectedWrites[%d]", n, j), "remove one of them")
				continue
			}
			seen[n] = i
		}
		if len(fsp.Credentials) > 0 && ok && fsp.Read.Rank() < AccessHome.Rank() {
			v.add("permissions.filesystem.credentials",
				fmt.Sprintf("names credentials to read, but the read scope is %q, which holds none", fsp.Read.Effective()),
				"set permissions.filesystem.read to \"home\" (or \"full\"), or remove credentials")
		}
		seenKind := map[string]int{}
		for i, k := range fsp.Credentials {
			path := fmt.Sprintf("permissions.filesystem.credentials[%d]", i)
			if err := permission.CheckCredential(k); err != nil {
				v.add(path, fmt.Sprintf("%q %v", k, err), "name the kind the tools truly need, e.g. \"npm\" for ~/.npmrc")
				continue
			}
			if j, dup := seenKind[k]; dup {
				v.add(path, fmt.Sprintf("%q repeats credentials[%d]", k, j), "remove one of them")
				continue
			}
			seenKind[k] = i
		}
	}
	if n := p.Network; n != nil {
		seen := map[string]int{}
		for i, h := range n.AllowedHosts {
			path := fmt.Sprintf("permissions.network.allowedHosts[%d]", i)
			parsed, err := ParseHost(h)
			if err != nil {
				v.add(path, fmt.Sprintf("%q %v", h, err), "write a host name (\"api.example.com\", \"*.example.com\", \"example.com:8443\") or an origin (\"https://api.example.com\")")
				continue
			}
			key := parsed.String()
			if j, dup := seen[key]; dup {
				v.add(path, fmt.Sprintf("%q repeats allowedHosts[%d]", h, j), "remove one of them")
				continue
			}
			seen[key] = i
		}
	}
}

func (v *validator) tools(m *Manifest) {
	seen := map[string]int{}
	for i, t := range m.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Name == "":
			v.add(p+".name", "is missing", "name the tool, e.g. \"lintFile\"")
		case !validToolName(t.Name):
			v.add(p+".name", fmt.Sprintf("%q is not a valid tool name", t.Name),
				"start with a letter or _, then letters, digits, _ . or -, at most 64 characters")
		default:
			if j, dup := seen[t.Name]; dup {
				v.add(p+".name", fmt.Sprintf("%q is already the name of tools[%d]", t.Name, j), "give each tool its own name")
			} else {
				seen[t.Name] = i
			}
		}
		if strings.TrimSpace(t.Description) == "" {
			v.add(p+".description", "is missing", "say in one sentence what the tool does; the model reads it to decide when to call it")
		} else if n := utf8.RuneCountInString(t.Description); n > MaxDescription {
			v.add(p+".description", fmt.Sprintf("of the tool %q is %d characters long, more than the %d a tool's description may have", t.Name, n, MaxDescription),
				"shorten it to what the model needs to decide when to call the tool (it gets every tool's description with every request); put the rest in a doc (docs[]), which the model reads on demand")
		}
		switch t.Runtime {
		case RuntimeNode, RuntimePython, RuntimeShell:
		case "":
			v.add(p+".runtime", "is missing", "add \"runtime\": \"python\", \"node\" or \"shell\"")
		default:
			v.add(p+".runtime", fmt.Sprintf("%q is not a runtime", t.Runtime), "use \"python\", \"node\" or \"shell\"")
		}
		switch t.Output {
		case "", OutputJSON, OutputString:
		default:
			v.add(p+".output", fmt.Sprintf("%q is not an output kind", t.Output), "use \"json\" or \"string\" (or leave it out for \"string\")")
		}
		if t.OutputSchema != nil {
			var schema struct {
				Type string `json:"type"`
			}
			switch {
			case t.Output != OutputJSON:
				v.add(p+".outputSchema", "is given for a tool whose output is not JSON", "add \"output\": \"json\", or remove outputSchema")
			case json.Unmarshal(t.OutputSchema, &schema) != nil || schema.Type != "object":
				v.add(p+".outputSchema", "is not a JSON Schema of an object", "give an object schema, such as {\"type\": \"object\", \"properties\": {...}}: MCP clients take structured results as objects")
			}
		}
		if t.Executable == "" {
			v.add(p+".executable", "is missing", "give the script's path inside the extension folder, e.g. \"tools/lint.py\"")
		} else if _, err := v.file(t.Executable); err != nil {
			v.add(p+".executable", fmt.Sprintf("%q %v", t.Executable, err), "%s", fileFix(err, "script"))
		}
		args := map[string]int{}
		for j, a := range t.Args {
			ap := fmt.Sprintf("%s.args[%d]", p, j)
			switch {
			case a.Name == "":
				v.add(ap+".name", "is missing", "name the argument; it is passed as --name value")
			case !validArgName(a.Name):
				v.add(ap+".name", fmt.Sprintf("%q cannot be a command-line flag", a.Name), "start with a letter, then letters, digits, _ or -")
			default:
				if k, dup := args[a.Name]; dup {
					v.add(ap+".name", fmt.Sprintf("%q is already the name of args[%d]", a.Name, k), "give each argument its own name")
				} else {
					args[a.Name] = j
				}
			}
			if n := utf8.RuneCountInString(a.Description); n > MaxDescription {
				v.add(ap+".description", fmt.Sprintf("of the argument %q of the tool %q is %d characters long, more than the %d an argument's description may have", a.Name, t.Name, n, MaxDescription),
					"shorten it (the model gets it with every request, in the tool's schema); put the rest in a doc (docs[])")
			}
			switch a.Type {
			case ArgString, ArgNumber, ArgInteger, ArgBoolean, ArgStringArray:
			case "":
				v.add(ap+".type", "is missing", "add \"type\": \"string\", \"number\", \"integer\", \"boolean\" or \"array\"")
			default:
				v.add(ap+".type", fmt.Sprintf("%q is not an argument type", a.Type), "use \"string\", \"number\", \"integer\", \"boolean\" or \"array\"")
			}
			if _, has, err := a.DefaultValue(); err != nil {
				v.add(ap+".default", err.Error(), "give a default of the argument's type, e.g. %s", defaultExample(a.Type))
			} else if has && a.Required != nil && *a.Required {
				v.add(ap+".required", "is true, but the argument has a default, which a call that leaves it out gets",
					"remove \"required\" (a default makes the argument optional) or the default")
			}
		}
	}
}

// defaultExample is a default of type t, for fixes.
func defaultExample(t ArgType) string {
	switch t {
	case ArgNumber:
		return "1.5"
	case ArgInteger:
		return "40"
	case ArgBoolean:
		return "false"
	case ArgStringArray:
		return `["a", "b"]`
	}
	return `"text"`
}

func (v *validator) docs(docs []Doc) {
	seen := map[string]int{}
	for i, d := range docs {
		p := fmt.Sprintf("docs[%d]", i)
		if d.Name == "" {
			v.add(p+".name", "is missing", "name the doc; the model asks for it by this name")
		} else if j, dup := seen[d.Name]; dup {
			v.add(p+".name", fmt.Sprintf("%q is already the name of docs[%d]", d.Name, j), "give each doc its own name")
		} else {
			seen[d.Name] = i
		}
		if d.File == "" {
			v.add(p+".file", "is missing", "give the document's path inside the extension folder, e.g. \"docs/rules.md\"")
		} else if _, err := v.file(d.File); err != nil {
			v.add(p+".file", fmt.Sprintf("%q %v", d.File, err), "%s", fileFix(err, "document"))
		}
	}
}

func (v *validator) examples(m *Manifest) {
	for i, e := range m.Examples {
		p := fmt.Sprintf("examples[%d]", i)
		if strings.TrimSpace(e.Prompt) == "" {
			v.add(p+".prompt", "is missing", "write what a person would ask, e.g. \"Lint the file src/index.js\"")
		}
		if strings.TrimSpace(e.ToolCall) == "" {
			v.add(p+".tool_call", "is missing", "write the call it should lead to, e.g. lintFile(file=\"src/index.js\")")
			continue
		}
		called, ok := calledTool(e.ToolCall)
		if !ok {
			v.add(p+".tool_call", fmt.Sprintf("%q is not a call", e.ToolCall), "write it as toolName(arg=\"value\")")
		} else if m.Tool(called) == nil {
			v.add(p+".tool_call", fmt.Sprintf("calls %q, which is not one of this extension's tools", called), "call a tool from \"tools\", or add the tool")
		}
	}
}

func (v *validator) mcpServers(servers map[string]json.RawMessage) {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := "mcpServers." + name
		var def map[string]json.RawMessage
		if err := json.Unmarshal(servers[name], &def); err != nil || def == nil {
			v.add(p, "is not an object", "describe the server as {\"command\": ..., \"args\": [...]} or {\"httpUrl\": ...}")
			continue
		}
		if name == "" {
			v.add("mcpServers", "has a server with an empty name", "give the server a name")
		}
		found := false
		for _, k := range []string{"command", "url", "httpUrl", "tcp"} {
			if raw, ok := def[k]; ok {
				var s string
				if json.Unmarshal(raw, &s) != nil || s == "" {
					v.add(p+"."+k, "is not a non-empty string", "give %s as a string", k)
				}
				found = true
			}
		}
		if !found {
			v.add(p, "says neither how to start the server nor where it is", "add \"command\" (a local server) or \"httpUrl\"/\"url\" (a remote one)")
		}
		if raw, ok := def["args"]; ok {
			var args []string
			if json.Unmarshal(raw, &args) != nil {
				v.add(p+".args", "is not a list of strings", "write args as [\"--flag\", \"value\"]")
			}
		}
	}
}

func (v *validator) settings(settings []Setting) {
	for i, s := range settings {
		p := fmt.Sprintf("settings[%d]", i)
		if s.Name == "" {
			v.add(p+".name", "is missing", "name the setting as the person will see it, e.g. \"API key\"")
		}
		if s.EnvVar == "" {
			v.add(p+".envVar", "is missing", "give the environment variable that carries it, e.g. \"MY_API_KEY\"")
		} else if !validEnvVar(s.EnvVar) {
			v.add(p+".envVar", fmt.Sprintf("%q is not an environment variable name", s.EnvVar), "use letters, digits and _, not starting with a digit")
		}
	}
}

func (v *validator) themes(themes []json.RawMessage) {
	for i, raw := range themes {
		var t struct {
			Name *string `json:"name"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			v.add(fmt.Sprintf("themes[%d]", i), "is not an object", "describe the theme as {\"name\": ..., \"type\": \"custom\", ...}")
		} else if t.Name == nil || *t.Name == "" {
			v.add(fmt.Sprintf("themes[%d].name", i), "is missing", "name the theme")
		}
	}
}

// plan flags a plan.directory Gemini CLI 0.61 drops, with the whole
// plan: ExtensionManager._buildExtension (packages/cli/src/config/
// extension-manager.ts) checks a truthy plan.directory, and sets plan to
// undefined, warning only in its debug log, when it is not a string, is
// absolute (path.isAbsolute, or path.win32.isAbsolute: a leading / or \,
// or a drive letter, colon and separator) or holds ".." anywhere
// ("Relative parent navigation and absolute paths are not allowed").
// raw is the plan as written: JSON.parse's reading, the last of two
// "directory" keys counts.
func (v *validator) plan(raw json.RawMessage) {
	var plan map[string]json.RawMessage
	if json.Unmarshal(raw, &plan) != nil {
		return // not an object: plan.directory is undefined
	}
	dir := bytes.TrimSpace(plan["directory"])
	if !jsTruthy(dir) {
		return
	}
	fix := "give a folder of the workspace, relative and without \"..\", e.g. \"plans\""
	var s string
	switch {
	case dir[0] != '"' || json.Unmarshal(dir, &s) != nil:
		v.add("plan.directory", "is not a string: Gemini CLI drops the whole plan setting", "%s", fix)
	case windowsAbs(s) || strings.HasPrefix(s, "/"):
		v.add("plan.directory", fmt.Sprintf("%q is an absolute path: Gemini CLI drops the whole plan setting", s), "%s", fix)
	case strings.Contains(s, ".."):
		v.add("plan.directory", fmt.Sprintf("%q holds \"..\": Gemini CLI drops the whole plan setting", s), "%s", fix)
	}
}

// jsTruthy is JavaScript's truthiness of the JSON value raw (nothing:
// undefined): false, null, "", and a number that is 0 as a double
// (1e-400 among them) are not.
func jsTruthy(raw []byte) bool {
	switch {
	case len(raw) == 0:
		return false
	case raw[0] == '"':
		return len(raw) > 2
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		f, _ := strconv.ParseFloat(string(raw), 64)
		return f != 0
	}
	s := string(raw)
	return s != "false" && s != "null"
}

// windowsAbs is Node's path.win32.isAbsolute: a leading / or \, or a
// drive letter, a colon and a separator.
func windowsAbs(s string) bool {
	if s == "" {
		return false
	}
	sep := func(c byte) bool { return c == '/' || c == '\\' }
	if sep(s[0]) {
		return true
	}
	c := s[0] | 0x20
	return len(s) > 2 && c >= 'a' && c <= 'z' && s[1] == ':' && sep(s[2])
}

// sortProblems orders problems by path (naturally: tools[2] before
// tools[10]) so that output is stable.
func sortProblems(p []Problem) {
	sort.SliceStable(p, func(i, j int) bool { return naturalLess(p[i].Path, p[j].Path) })
}

func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingNumber(s string) (int, string) {
	n, i := 0, 0
	for i < len(s) && isDigit(s[i]) {
		n = n*10 + int(s[i]-'0')
		i++
	}
	return n, s[i:]
}
