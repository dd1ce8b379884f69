package agentplugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fsutil"
)

const head = `"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"`

// plugin writes files (name → content; a content starting "->" is a
// link to the rest) into a new folder and reads it.
func plugin(t *testing.T, files map[string]string) (*Plugin, error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(body, "->"); ok {
			err = os.Symlink(target, p)
		} else if strings.HasSuffix(name, "/") {
			err = os.MkdirAll(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	return Read(root)
}

// TestRejected: each class of plugin.json Agent Plugins 1.0.0 has a
// client reject (§5.2, §5.3, §5.4, §5.5, §4.1), and the ones gemkit
// refuses because clients' JSON readers disagree on them (a member given
// twice), is refused whole, in words naming the field.
func TestRejected(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "plugin.json")
	os.WriteFile(outside, []byte(`{`+head+`, "name": "far"}`), 0o644)
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"no manifest", "", "there is none at the plugin root"},
		{"not JSON", `{"name": "x",}`, "not JSON every client reads alike"},
		{"byte order mark", "\ufeff{" + head + `, "name": "x"}`, "not JSON every client reads alike"},
		{"duplicate key", `{` + head + `, "name": "good", "name": "evil"}`, `the key "name" is given twice`},
		{"duplicate nested key", `{` + head + `, "name": "x", "author": {"name": "a", "name": "b"}}`, `the key "name" is given twice`},
		{"duplicate through escapes", `{` + head + `, "name": "x", "n\u0061me": "y"}`, `the key "name" is given twice`},
		{"array", `[]`, "a JSON array, not an object"},
		{"no schema", `{"name": "x"}`, "$schema: is missing"},
		{"schema of another version", `{"$schema": "https://agent-plugins.org/schemas/2.0.0/plugin.schema.json", "name": "x"}`, "not an Agent Plugins version gemkit reads"},
		{"schema not a string", `{"$schema": 1, "name": "x"}`, "$schema: is a JSON number, not a string"},
		{"schema in other letters", `{"$Schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "x"}`, "$schema: is missing"},
		{"no name", `{` + head + `}`, "name: is missing"},
		{"name a number", `{` + head + `, "name": 7}`, "name: is a JSON number, not a string"},
		{"name uppercase", `{` + head + `, "name": "My-Plugin"}`, "may hold only lowercase"},
		{"name leading hyphen", `{` + head + `, "name": "-start"}`, "must start and end with a letter or a digit"},
		{"name double hyphen", `{` + head + `, "name": "has--double"}`, "has -- or .. in it"},
		{"name double period", `{` + head + `, "name": "too.many..dots"}`, "has -- or .. in it"},
		{"name empty", `{` + head + `, "name": ""}`, "is empty"},
		{"name too long", `{` + head + `, "name": "` + strings.Repeat("a", 65) + `"}`, "longer than 64"},
		{"name with a slash", `{` + head + `, "name": "a/b"}`, "may hold only lowercase"},
		{"version a number", `{` + head + `, "name": "x", "version": 1}`, "version: is a JSON number, not a string"},
		{"description null", `{` + head + `, "name": "x", "description": null}`, "description: is a JSON null, not a string"},
		{"author a string", `{` + head + `, "name": "x", "author": "me"}`, "author: is a JSON string, not an object"},
		{"author with another field", `{` + head + `, "name": "x", "author": {"name": "a", "phone": "1"}}`, "author.phone: author may hold only"},
		{"author name a number", `{` + head + `, "name": "x", "author": {"name": 1}}`, "author.name: is a JSON number"},
		{"keywords a string", `{` + head + `, "name": "x", "keywords": "a"}`, "keywords: is a JSON string, not an array of strings"},
		{"keyword a number", `{` + head + `, "name": "x", "keywords": ["a", 2]}`, "keywords[1]: is a JSON number"},
		{"manifest a link out", "->" + outside, "a link out of the plugin's folder"},
		{"manifest a folder", "/", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			switch {
			case tc.manifest == "/":
				files["plugin.json/"] = ""
			case tc.manifest != "":
				files["plugin.json"] = tc.manifest
			}
			p, err := plugin(t, files)
			var rej *RejectedError
			if !errors.As(err, &rej) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want it rejected saying %q", p, err, tc.want)
			}
		})
	}
}

// TestManifestNotes: what is reported and ignored leaves the plugin
// loaded (§5.2, §8.1), and gives nothing a meaning: a top-level
// mcpServers is not a server.
func TestManifestNotes(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, note string
	}{
		{"minimal", `{` + head + `, "name": "minimal-plugin"}`, ""},
		{"full", `{` + head + `, "name": "acme.tools", "version": "not semver", "description": "d", "author": {"name": "n", "email": "not an email", "url": "not a url"},
 "homepage": "h", "repository": "r", "license": "not SPDX", "keywords": ["a"], "extensions": {}}`, ""},
		{"unknown field", `{` + head + `, "name": "x", "mcpServers": {"s": {"type": "stdio", "command": "node"}}}`, "plugin.json: mcpServers: an unknown field, ignored"},
		{"field in other letters", `{` + head + `, "name": "x", "Version": 1}`, "plugin.json: Version: an unknown field, ignored"},
		{"extensions not an object", `{` + head + `, "name": "x", "extensions": "com.example"}`, "plugin.json: extensions: is a JSON string, not an object: ignored"},
		{"an unimplemented namespace", `{` + head + `, "name": "x", "extensions": {"com.example.client": 5}}`, "gemkit implements none of com.example.client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plugin(t, map[string]string{"plugin.json": tc.manifest})
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			for _, n := range p.Notes {
				notes = append(notes, n.String())
			}
			got := strings.Join(notes, "\n")
			if tc.note == "" && got != "" || !strings.Contains(got, tc.note) {
				t.Errorf("notes:\n%s\nwant %q", got, tc.note)
			}
			if len(p.Servers) != 0 {
				t.Errorf("servers from plugin.json: %v", p.Servers)
			}
		})
	}
}

const mcpHead = `"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"`

// TestMCPFile: whatever is wrong with mcp.json as a whole leaves the
// plugin without MCP servers, noted, and its skills loaded (§7.2.2(2),
// §6.2); an absent one is no note at all.
func TestMCPFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(outside, []byte(`{`+mcpHead+`, "mcpServers": {"s": {"type": "stdio", "command": "node"}}}`), 0o644)
	for _, tc := range []struct {
		name, mcp, note string
	}{
		{"absent", "", ""},
		{"not JSON", `{`, "not JSON every client reads alike"},
		{"duplicate key", `{` + mcpHead + `, "mcpServers": {"s": {"type": "stdio", "command": "node", "command": "sh"}}}`, `the key "command" is given twice`},
		{"another field", `{` + mcpHead + `, "mcpServers": {}, "inputs": []}`, "it has the field inputs"},
		{"no schema", `{"mcpServers": {}}`, "its $schema is not"},
		{"another version", `{"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {}}`, "its $schema is not"},
		{"servers an array", `{` + mcpHead + `, "mcpServers": []}`, "its mcpServers is missing or not an object"},
		{"a link out", "->" + outside, "a link out of the plugin's folder"},
		{"a folder", "/", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"plugin.json": `{` + head + `, "name": "x"}`, "skills/greet/SKILL.md": "---\nname: greet\ndescription: Greets.\n---\nHi.\n"}
			switch {
			case tc.mcp == "/":
				files["mcp.json/"] = ""
			case tc.mcp != "":
				files["mcp.json"] = tc.mcp
			}
			p, err := plugin(t, files)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, n := range p.Notes {
				got += n.String() + "\n"
			}
			if len(p.Servers) != 0 || len(p.Skills) != 1 {
				t.Errorf("servers %v, skills %v", p.Servers, p.Skills)
			}
			if tc.note == "" && got != "" || !strings.Contains(got, tc.note) || tc.note != "" && !strings.Contains(got, "the plugin's MCP servers are not loaded") {
				t.Errorf("notes:\n%s\nwant %q", got, tc.note)
			}
		})
	}
}

// TestServerEntries: each invalid entry is skipped with its reason, and
// the valid one beside it loads (§7.2.1, §7.2.2(3), §9.2, §4.1).
func TestServerEntries(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name, def, why string
	}{
		{"valid stdio", `{"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/s.mjs"], "env": {"A": "b"}, "cwd": "${PLUGIN_DATA}/w"}`, ""},
		{"valid relative", `{"type": "stdio", "command": "./bin/server", "cwd": "./bin"}`, ""},
		{"valid http", `{"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X-Tenant": "t"}}`, ""},
		{"valid loopback http", `{"type": "sse", "url": "http://127.0.0.1:9/sse"}`, ""},
		{"valid localhost", `{"type": "streamable-http", "url": "http://localhost:9/mcp"}`, ""},
		{"not an object", `"node"`, "it is a JSON string, not an object"},
		{"no type", `{"command": "node"}`, "it has no type"},
		{"unknown type", `{"type": "websocket", "url": "wss://x"}`, `its type "websocket" is not one`},
		{"type in other letters", `{"type": "STDIO", "command": "node"}`, `its type "STDIO" is not one`},
		{"field of another variant", `{"type": "stdio", "command": "node", "url": "https://x"}`, "the field url does not belong to a stdio server"},
		{"unknown field", `{"type": "stdio", "command": "node", "timeout": 5}`, "the field timeout does not belong"},
		{"no command", `{"type": "stdio"}`, "it has no command"},
		{"command a list", `{"type": "stdio", "command": ["node"]}`, "its command is a JSON array"},
		{"command a shell line", `{"type": "stdio", "command": "node server.mjs"}`, "is not one program name"},
		{"command with a placeholder", `{"type": "stdio", "command": "${PLUGIN_ROOT}/bin/server"}`, "no placeholder is expanded in command"},
		{"command absolute", `{"type": "stdio", "command": "/usr/bin/node"}`, "neither a bare program name nor a path starting ./"},
		{"command up and out", `{"type": "stdio", "command": "./../x"}`, "leads out of the plugin's folder"},
		{"command through a link out", `{"type": "stdio", "command": "./out/x"}`, "leads out of the plugin's folder through a link"},
		{"args a string", `{"type": "stdio", "command": "node", "args": "-v"}`, "its args is a JSON string"},
		{"arg a number", `{"type": "stdio", "command": "node", "args": [1]}`, "its args[0] is a JSON number"},
		{"env value a number", `{"type": "stdio", "command": "node", "env": {"N": 1}}`, "its env.N is a JSON number"},
		{"env sets PLUGIN_ROOT", `{"type": "stdio", "command": "node", "env": {"PLUGIN_ROOT": "/"}}`, "its env sets PLUGIN_ROOT"},
		{"env sets PLUGIN_DATA", `{"type": "stdio", "command": "node", "env": {"PLUGIN_DATA": "/"}}`, "its env sets PLUGIN_DATA"},
		{"env name with =", `{"type": "stdio", "command": "node", "env": {"A=B": "c"}}`, "which no environment variable can have"},
		{"cwd bare", `{"type": "stdio", "command": "node", "cwd": "data"}`, "is none of ./PATH"},
		{"cwd absolute", `{"type": "stdio", "command": "node", "cwd": "/tmp"}`, "is none of ./PATH"},
		{"cwd up and out", `{"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}/../.."}`, "leads out of the plugin's folder"},
		{"cwd through a link out", `{"type": "stdio", "command": "node", "cwd": "./out"}`, "leads out of the plugin's folder through a link"},
		{"cwd a number", `{"type": "stdio", "command": "node", "cwd": 1}`, "its cwd is a JSON number"},
		{"arg with NUL", `{"type": "stdio", "command": "node", "args": ["a\u0000b"]}`, "holds a NUL byte"},
		{"no url", `{"type": "streamable-http"}`, "it has no url"},
		{"url relative", `{"type": "streamable-http", "url": "/mcp"}`, "is not an absolute http or https URL"},
		{"url ftp", `{"type": "sse", "url": "ftp://example.com/"}`, "is not an absolute http or https URL"},
		{"url plain http out", `{"type": "streamable-http", "url": "http://example.com/mcp"}`, "requires https there"},
		{"url loopback-looking name", `{"type": "streamable-http", "url": "http://localhost.example.com/mcp"}`, "requires https there"},
		{"url with user", `{"type": "streamable-http", "url": "https://me:pw@example.com/mcp"}`, "holds user information"},
		{"url with fragment", `{"type": "streamable-http", "url": "https://example.com/mcp#x"}`, "holds a fragment"},
		{"header in two casings", `{"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X-A": "1", "x-a": "2"}}`, "one name in two casings"},
		{"header name bad", `{"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X A": "1"}}`, "is not a valid HTTP header name"},
		{"header value with a new line", `{"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X-A": "1\r\nHost: evil"}}`, "not a valid HTTP header value"},
		{"headers on stdio", `{"type": "stdio", "command": "node", "headers": {}}`, "the field headers does not belong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plugin(t, map[string]string{
				"plugin.json": `{` + head + `, "name": "x"}`,
				"mcp.json":    `{` + mcpHead + `, "mcpServers": {"other": {"type": "stdio", "command": "node"}, "s": ` + tc.def + `}}`,
				"bin/server":  "#!/bin/sh\n",
				"out":         "->" + outside,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := p.Servers["other"]; !ok {
				t.Errorf("the valid entry beside it was not loaded: %v", p.Notes)
			}
			got := ""
			for _, n := range p.Notes {
				got += n.String() + "\n"
			}
			_, loaded := p.Servers["s"]
			switch {
			case tc.why == "" && (!loaded || got != ""):
				t.Errorf("not loaded, or noted:\n%s", got)
			case tc.why != "" && (loaded || !strings.Contains(got, "mcp.json: mcpServers.s: ") || !strings.Contains(got, tc.why) || !strings.Contains(got, "this server is skipped")):
				t.Errorf("loaded %v; notes:\n%s\nwant %q", loaded, got, tc.why)
			}
		})
	}
}

// TestExpand: ${PLUGIN_ROOT} and ${PLUGIN_DATA} alone are replaced, in
// one pass (what a replacement brings in is not read again), and other
// placeholder-like text stays as written (§9.2).
func TestExpand(t *testing.T) {
	root, data := "/p/${PLUGIN_DATA}", "/d/${PLUGIN_ROOT}"
	for in, want := range map[string]string{
		"${PLUGIN_ROOT}/s.mjs":           "/p/${PLUGIN_DATA}/s.mjs",
		"${PLUGIN_DATA}":                 "/d/${PLUGIN_ROOT}",
		"${PLUGIN_ROOT}${PLUGIN_DATA}":   "/p/${PLUGIN_DATA}/d/${PLUGIN_ROOT}",
		"${HOME} $HOME ${plugin_root}":   "${HOME} $HOME ${plugin_root}",
		"${PLUGIN_ROOT ${CLAUDE_PLUGIN}": "${PLUGIN_ROOT ${CLAUDE_PLUGIN}",
		"$${PLUGIN_ROOT}}":               "$/p/${PLUGIN_DATA}}",
	} {
		if got := Expand(in, root, data); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSkills: the folders right under skills/ with a SKILL.md that is a
// regular file inside the plugin, and no deeper (§7.1); a skills that is
// no folder is noted and the plugin loads (§6.2).
func TestSkills(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "SKILL.md")
	os.WriteFile(outside, []byte("---\nname: far\ndescription: Far.\n---\n"), 0o644)
	p, err := plugin(t, map[string]string{
		"plugin.json":              `{` + head + `, "name": "x"}`,
		"skills/greet/SKILL.md":    "s",
		"skills/deep/a/b/SKILL.md": "s",
		"skills/SKILL.md":          "s",
		"skills/far/SKILL.md":      "->" + outside,
		"skills/dir/SKILL.md/":     "",
		"skills/linked":            "->greet",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Skills, " "); got != "skills/greet skills/linked" {
		t.Errorf("skills %q", got)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0].String(), "skills/far/SKILL.md: it is a link out") {
		t.Errorf("notes %v", p.Notes)
	}
	p, err = plugin(t, map[string]string{"plugin.json": `{` + head + `, "name": "x"}`, "skills": "a file"})
	if err != nil || len(p.Skills) != 0 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0].Text, "not a folder") {
		t.Errorf("skills a file: %v, %+v", err, p)
	}
	for _, tc := range []struct{ dir, name, desc, why string }{
		{"skills/greet", "greet", "Greets.", ""},
		{"skills/greet", "other", "Greets.", "not its folder's"},
		{"skills/Greet", "Greet", "Greets.", "only lowercase"},
		{"skills/-g", "-g", "Greets.", "must not start or end with a hyphen"},
		{"skills/a--b", "a--b", "Greets.", "two in a row"},
		{"skills/greet", "greet", " ", "description is empty"},
		{"skills/greet", "greet", strings.Repeat("d", 1025), "longer than 1,024"},
	} {
		if got := SkillProblem(tc.dir, tc.name, tc.desc); tc.why == "" && got != "" || !strings.Contains(got, tc.why) {
			t.Errorf("SkillProblem(%q, %q) = %q, want %q", tc.dir, tc.name, got, tc.why)
		}
	}
}
