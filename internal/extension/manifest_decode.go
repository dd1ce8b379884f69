package extension

import (
	"encoding/json"
)

// This file decodes a manifest of the usual shape in one pass over its
// bytes, without reflection. encoding/json takes about 370,000
// instructions for the 2 KB manifest of the "tools" template (it scans
// the document twice, once to check it and once to decode it, calling a
// state function per byte, and reaches each field through reflection),
// which was most of the time `gemkit extensions list` spent with 200
// extensions installed; this reader takes a tenth of that. It is written
// by hand because the standard library has no faster decoder (its
// encoding/json/v2 is still an experiment) and the manifest's types are
// few and fixed.
//
// It takes only what it can decode exactly as encoding/json does and
// gives up on anything else: a member of the wrong type, a member given
// twice (encoding/json then merges the two), a key that matches a field
// only when case is ignored, a string it cannot read plainly, and any
// JSON that is not valid. parseFast then decodes the manifest with
// encoding/json, and FuzzDecodeManifestMatchesDecoder checks that both
// give the same Manifest whenever this one does not give up.
// TestManifestDecoderKnowsEveryField fails when a field is added to the
// manifest's types and not here.

// decodeManifest decodes data into the fields parseFast reads, and finds
// the keys nothing reads as unknownKeys does; ok is false when it gives
// up.
func decodeManifest(data []byte) (w manifestWire, extra map[string]json.RawMessage, unknown []Problem, ok bool) {
	r := &manifestReader{data: data}
	var seen fieldSet
	r.object(func(key []byte) {
		i := indexOf(topLevelKeys, key)
		if i < 0 {
			r.unknown(key, topLevelKeys)
			r.keys.top(string(key))
			raw := r.raw()
			if !r.bad {
				if extra == nil {
					extra = map[string]json.RawMessage{}
				}
				extra[string(key)] = raw
			}
			return
		}
		if !seen.add(i) {
			r.bad = true
			return
		}
		switch topLevelKeys[i] {
		case "name":
			r.str(&w.Name)
		case "version":
			r.str(&w.Version)
		case "description":
			r.str(&w.Description)
		case "permissions":
			w.Permissions = r.permissions()
		case "mcpServers":
			w.MCPServers = r.rawMap()
		case "contextFileName":
			w.ContextFileName = r.raw()
		case "excludeTools":
			w.ExcludeTools = list(r, func(s *string) { r.str(s) })
		case "settings":
			w.Settings = list(r, r.setting)
		case "themes":
			w.Themes = list(r, func(raw *json.RawMessage) { *raw = r.raw() })
		case "migratedTo":
			r.str(&w.MigratedTo)
		case "plan":
			w.Plan = r.raw()
		case "tools":
			n := 0
			w.Tools = list(r, func(t *Tool) { r.tool(t, n); n++ })
		case "docs":
			w.Docs = list(r, r.doc)
		case "examples":
			w.Examples = list(r, r.example)
		default:
			// A field of the manifest this reader does not know.
			r.bad = true
		}
	})
	r.space()
	if r.bad || r.i != len(r.data) {
		return manifestWire{}, nil, nil, false
	}
	r.keys.servers(w.MCPServers)
	return w, extra, r.keys, true
}

// The keys of each object of the manifest, as encoding/json matches them
// to the fields of manifestWire and the types below it (with toolKeys
// and argKeys).
var (
	topLevelKeys   = []string{"name", "version", "description", "permissions", "mcpServers", "contextFileName", "excludeTools", "settings", "themes", "migratedTo", "plan", "tools", "docs", "examples"}
	permissionKeys = []string{"filesystem", "network"}
	filesystemKeys = []string{"read", "write", "protectedWrites", "credentials"}
	networkKeys    = []string{"allowedHosts"}
	settingKeys    = []string{"name", "description", "envVar", "sensitive"}
	docKeys        = []string{"name", "description", "file"}
	exampleKeys    = []string{"prompt", "tool_call"}
)

func (r *manifestReader) permissions() *Permissions {
	if r.null() {
		return nil
	}
	p := &Permissions{}
	r.fields(permissionKeys, func(i int) {
		switch permissionKeys[i] {
		case "filesystem":
			if r.null() {
				p.Filesystem = nil
				return
			}
			f := &FilesystemPermissions{}
			r.fields(filesystemKeys, func(i int) {
				switch filesystemKeys[i] {
				case "read":
					r.str((*string)(&f.Read))
				case "write":
					r.str((*string)(&f.Write))
				case "protectedWrites":
					f.ProtectedWrites = list(r, func(s *string) { r.str(s) })
				case "credentials":
					f.Credentials = list(r, func(s *string) { r.str(s) })
				}
			}, nil)
			p.Filesystem = f
		case "network":
			if r.null() {
				p.Network = nil
				return
			}
			n := &NetworkPermissions{}
			r.fields(networkKeys, func(int) {
				n.AllowedHosts = list(r, func(s *string) { r.str(s) })
			}, nil)
			p.Network = n
		}
	}, nil)
	return p
}

func (r *manifestReader) setting(s *Setting) {
	r.fields(settingKeys, func(i int) {
		switch settingKeys[i] {
		case "name":
			r.str(&s.Name)
		case "description":
			r.str(&s.Description)
		case "envVar":
			r.str(&s.EnvVar)
		case "sensitive":
			if v, ok := r.boolean(); ok {
				s.Sensitive = v
			}
		}
	}, nil)
}

// tool reads tools[n].
func (r *manifestReader) tool(t *Tool, n int) {
	r.fields(toolKeys, func(i int) {
		switch toolKeys[i] {
		case "name":
			r.str(&t.Name)
		case "description":
			r.str(&t.Description)
		case "executable":
			r.str(&t.Executable)
		case "runtime":
			r.str((*string)(&t.Runtime))
		case "output":
			r.str((*string)(&t.Output))
		case "outputSchema":
			t.OutputSchema = r.raw()
		case "args":
			j := 0
			t.Args = list(r, func(a *Arg) { r.arg(a, n, j); j++ })
		}
	}, func(key string) { r.keys.tool(n, key) })
}

// arg reads tools[n].args[j].
func (r *manifestReader) arg(a *Arg, n, j int) {
	r.fields(argKeys, func(i int) {
		switch argKeys[i] {
		case "name":
			r.str(&a.Name)
		case "type":
			r.str((*string)(&a.Type))
		case "description":
			r.str(&a.Description)
		case "required":
			if v, ok := r.boolean(); ok {
				a.Required = &v
			} else {
				a.Required = nil
			}
		case "default":
			a.Default = r.raw()
		}
	}, func(key string) { r.keys.arg(n, j, key) })
}

func (r *manifestReader) doc(d *Doc) {
	r.fields(docKeys, func(i int) {
		switch docKeys[i] {
		case "name":
			r.str(&d.Name)
		case "description":
			r.str(&d.Description)
		case "file":
			r.str(&d.File)
		}
	}, nil)
}

func (r *manifestReader) example(e *Example) {
	r.fields(exampleKeys, func(i int) {
		switch exampleKeys[i] {
		case "prompt":
			r.str(&e.Prompt)
		case "tool_call":
			r.str(&e.ToolCall)
		}
	}, nil)
}
