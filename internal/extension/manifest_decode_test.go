package extension

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/agentread"
)

// manifestSeeds are manifests of every shape at hand: the templates, the
// Gemini CLI compatibility cases, and members that encoding/json reads in
// its own way (null, repeated, case variants, escapes, numbers).
func manifestSeeds(t testing.TB) []string {
	t.Helper()
	seeds := []string{
		planManifest,
		`{}`, `{"name":null,"tools":null,"permissions":null,"mcpServers":null,"settings":[null],"themes":[null,1]}`,
		`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"x-y":{"z":[1,2e3,-0.5,true,false,null,"\u00e9"]},"x-y":1}`,
		`{"tools":[],"docs":[],"examples":[],"excludeTools":[],"themes":[],"mcpServers":{}}`,
		`{"tools":[{"name":"t","args":[{"name":"a","required":false,"default":[1,{"a":null}]},{"required":null}],"outputSchema":null,"timeout":3}]}`,
		`{"tools":[{"name":"t","NAME":"u"}]}`, `{"tools":[{"name":"t","name":"u"}]}`,
		`{"excludTools":[],"hooks":{},"nme":"x","tools":[{"tmeout":1,"args":[{"requried":true},null,{"x":1}]},null,{"y":2}],"mcpServers":{"s":{"comand":"x","cwdd":1},"t":2}}`,
		`{"permissions":{"filesystem":{"read":"workspace","write":null},"network":{"allowedHosts":null}},"permissions2":1}`,
		`{"permissions":{"filesystem":null,"network":{"allowedHosts":["a",null]}}}`,
		`{"permissions":{"filesystem":{"write":"workspace","protectedWrites":[".husky",".env.local"]}}}`,
		`{"permissions":{"filesystem":{"protectedWrites":null,"protectedwrites":[]}}}`,
		`{"settings":[{"name":"s","envVar":"E","sensitive":true},{"sensitive":null}]}`,
		`{"description":"tab\tquote\" slash\/ back\\ nl\n é ☃","contextFileName":["A.md","B.md"],"plan":{"directory":"p"}}`,
		`{"description":"\u0041"}`, "{\"description\":\"\xff\"}", `{"n\/ame":1}`, `{"name":"a"} x`, `{"name":"a",}`,
		`{"mcpServers":{"s":{"command":"c"},"s":{"url":"u"}}}`, ` {"name" : "a" } `, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":tru}`,
		"{\"name\":\"a\x01\"}", `[]`, `null`, `"x"`,
	}
	for _, name := range templateNames(t) {
		data, err := templateFS.ReadFile("templates/" + name + "/" + ManifestFile)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, string(data))
	}
	compat, err := filepath.Glob(filepath.Join("testdata", "compat", "*", ManifestFile))
	if err != nil || len(compat) == 0 {
		t.Fatalf("no compatibility manifests: %v", err)
	}
	for _, p := range compat {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, string(data))
	}
	return seeds
}

func templateNames(t testing.TB) []string {
	t.Helper()
	entries, err := fs.ReadDir(templateFS, "templates")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, err := fs.Stat(templateFS, "templates/"+e.Name()+"/"+ManifestFile); err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

// FuzzDecodeManifestMatchesDecoder: whenever the hand-written reader
// takes a document as the manifest's parse gives it (written again as
// Gemini CLI reads it, asGeminiReadsIt), the exact decoder
// (agentread.Unmarshal) takes it too and decodes exactly the same
// values, and the reader finds the unknown keys unknownKeys finds (go
// test -fuzz explores further).
func FuzzDecodeManifestMatchesDecoder(f *testing.F) {
	for _, seed := range manifestSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		data, err := asGeminiReadsIt([]byte(doc))
		if err != nil {
			return
		}
		doc = string(data)
		w, extra, unknown, ok := decodeManifest([]byte(doc))
		if !ok {
			return
		}
		jw, jextra, jok := decodeManifestJSON([]byte(doc))
		if !jok {
			t.Fatalf("%q: the reader took what encoding/json refuses", doc)
		}
		if !reflect.DeepEqual(w, jw) || !reflect.DeepEqual(extra, jextra) {
			t.Fatalf("%q:\nreader       %#v %q\nencoding/json %#v %q", doc, w, extra, jw, jextra)
		}
		want := unknownKeys([]byte(doc))
		sortProblems(unknown)
		sortProblems(want)
		if !reflect.DeepEqual(unknown, want) {
			t.Fatalf("%q: unknown keys\nreader      %q\nunknownKeys %q", doc, unknown, want)
		}
	})
}

// TestDecodeManifestTakesTheTemplates: the manifests gemkit writes, and
// those of the compatibility cases, are read by the hand-written reader,
// not by the fallback.
func TestDecodeManifestTakesTheTemplates(t *testing.T) {
	for _, name := range templateNames(t) {
		data, _ := templateFS.ReadFile("templates/" + name + "/" + ManifestFile)
		if _, _, _, ok := decodeManifest(data); !ok {
			t.Errorf("template %s: the reader gave up", name)
		}
	}
	compat, _ := filepath.Glob(filepath.Join("testdata", "compat", "*", ManifestFile))
	for _, p := range compat {
		data, _ := os.ReadFile(p)
		if _, _, _, ok := decodeManifest(data); !ok {
			t.Errorf("%s: the reader gave up", p)
		}
	}
}

// TestManifestDecoderKnowsEveryField: the reader's key lists are the
// JSON names of the fields of the manifest's types. A field added to one
// of those types must be read in manifest_decode.go too; until it is,
// this test fails (and the reader, which does not know the key, would
// skip it where encoding/json reads it).
func TestManifestDecoderKnowsEveryField(t *testing.T) {
	for _, tc := range []struct {
		typ  any
		keys []string
	}{
		{manifestWire{}, topLevelKeys},
		{Permissions{}, permissionKeys},
		{FilesystemPermissions{}, filesystemKeys},
		{NetworkPermissions{}, networkKeys},
		{Setting{}, settingKeys},
		{Tool{}, toolKeys},
		{Arg{}, argKeys},
		{Doc{}, docKeys},
		{Example{}, exampleKeys},
	} {
		typ := reflect.TypeOf(tc.typ)
		var names []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names = append(names, name)
		}
		if !slices.Equal(names, tc.keys) {
			t.Errorf("%s has the JSON fields %q; manifest_decode.go reads %q", typ, names, tc.keys)
		}
	}
	var known []string
	for k := range knownFields {
		known = append(known, k)
	}
	slices.Sort(known)
	top := slices.Sorted(slices.Values(topLevelKeys))
	if !slices.Equal(known, top) {
		t.Errorf("knownFields %q, but the reader reads the top-level keys %q", known, top)
	}
}

// BenchmarkDecodeManifest reads the "tools" template's manifest with the
// hand-written reader and, as the reference, with encoding/json.
func BenchmarkDecodeManifest(b *testing.B) {
	data, err := templateFS.ReadFile("templates/tools/" + ManifestFile)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reader", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, ok := decodeManifest(data); !ok {
				b.Fatal("gave up")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := decodeManifestJSON(data); !ok {
				b.Fatal("refused")
			}
		}
	})
}

// TestManifestReadAsGeminiCLI: a manifest is read as Gemini CLI 0.61
// reads it (loadExtensionConfig: JSON.parse), by class: keys in other
// letters are other keys at every level, the last duplicate wins, and
// what gemkit cannot read so is an error that says so.
func TestManifestReadAsGeminiCLI(t *testing.T) {
	for _, tt := range []struct {
		name, doc  string
		servers    string // the servers' names and commands
		unreadable bool
	}{
		{"servers in other letters", `{"name":"x","version":"1","mcpServers":{"real":{"command":"evil"}},"MCPServers":{"decoy":{"command":"true"}}}`, "real:evil", false},
		{"a command in other letters", `{"name":"x","version":"1","mcpServers":{"real":{"command":"evil","Command":"decoy"}}}`, "real:evil", false},
		{"only a command in other letters", `{"name":"x","version":"1","mcpServers":{"real":{"Command":"decoy"}}}`, "real:", false},
		{"the last duplicate", `{"name":"x","version":"1","mcpServers":{"s":{"command":"decoy"}},"mcpServers":{"real":{"command":"evil","command":"last"}}}`, "real:last", false},
		{"a lone surrogate", `{"name":"x","version":"1","description":"\ud800","mcpServers":{"s":{"command":"c"}}}`, "", true},
		{"invalid UTF-8", "{\"name\":\"x\",\"version\":\"1\",\"description\":\"\xff\",\"mcpServers\":{\"s\":{\"command\":\"c\"}}}", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, _, err := ParseManifest([]byte(tt.doc))
			if agentread.IsUnreadable(err) != tt.unreadable || err != nil && !tt.unreadable {
				t.Fatalf("err %v, want unreadable %v", err, tt.unreadable)
			}
			if err != nil {
				return
			}
			var got []string
			for _, n := range slices.Sorted(maps.Keys(m.MCPServers)) {
				var d struct {
					Command string `json:"command"`
				}
				if err := agentread.Unmarshal(m.MCPServers[n], &d, true); err != nil {
					t.Fatal(err)
				}
				got = append(got, n+":"+d.Command)
			}
			if strings.Join(got, ",") != tt.servers {
				t.Errorf("servers %v, want %s", got, tt.servers)
			}
		})
	}
}
