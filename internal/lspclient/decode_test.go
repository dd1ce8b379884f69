package lspclient

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
)

func rng(l1, c1, l2, c2 int) codeintel.Range {
	return codeintel.Range{Start: codeintel.Position{Line: l1, Character: c1}, End: codeintel.Position{Line: l2, Character: c2}}
}

// The shapes of LSP 3.17's answers (the specification's
// "textDocument/definition" to "callHierarchy/outgoingCalls"), as
// servers send them and the editors' clients pass them on.
func TestDecodeLocations(t *testing.T) {
	cases := []struct {
		name, raw string
		want      []codeintel.Location
	}{
		{"null", `null`, nil},
		{"absent", ``, nil},
		{"one Location", `{"uri":"file:///w/a.go","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}}`,
			[]codeintel.Location{{Path: "/w/a.go", Range: rng(1, 2, 1, 5)}}},
		{"Location[] (gopls)", `[{"uri":"file:///w/a%20b.go","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}},{"uri":"file:///usr/lib/go/src/fmt/print.go","range":{"start":{"line":9,"character":5},"end":{"line":9,"character":12}}}]`,
			[]codeintel.Location{{Path: "/w/a b.go", Range: rng(0, 0, 0, 1)}, {Path: "/usr/lib/go/src/fmt/print.go", Range: rng(9, 5, 9, 12)}}},
		{"LocationLink[]: the name's range", `[{"targetUri":"file:///w/b.ts","targetRange":{"start":{"line":3,"character":0},"end":{"line":6,"character":1}},"targetSelectionRange":{"start":{"line":3,"character":9},"end":{"line":3,"character":14}}}]`,
			[]codeintel.Location{{Path: "/w/b.ts", Range: rng(3, 9, 3, 14)}}},
		{"a URI of another scheme", `[{"uri":"jdt://contents/java.base/String.class","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}]`,
			[]codeintel.Location{{URI: "jdt://contents/java.base/String.class"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeLocations(json.RawMessage(c.raw))
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	if _, err := DecodeLocations(json.RawMessage(`{"uri":3}`)); err == nil {
		t.Error("a location whose uri is a number was taken")
	}
}

func TestDecodeHover(t *testing.T) {
	cases := []struct{ name, raw, want string }{
		{"MarkupContent (gopls)", `{"contents":{"kind":"markdown","value":"` + "```go\\nfunc Greet(name string) string\\n```" + `"}}`, "```go\nfunc Greet(name string) string\n```"},
		{"MarkedString", `{"contents":"plain text"}`, "plain text"},
		{"MarkedString[] with a language", `{"contents":[{"language":"python","value":"def f()"},"Docs."]}`, "```python\ndef f()\n```\n\nDocs."},
		{"null", `null`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeHover(json.RawMessage(c.raw))
			if err != nil || got.Text != c.want {
				t.Errorf("got %q, %v; want %q", got.Text, err, c.want)
			}
		})
	}
}

func TestDecodeSymbols(t *testing.T) {
	doc := `[{"name":"Store","kind":23,"detail":"struct{...}","range":{"start":{"line":10,"character":5},"end":{"line":12,"character":1}},"selectionRange":{"start":{"line":10,"character":5},"end":{"line":10,"character":10}},
	  "children":[{"name":"items","kind":8,"range":{"start":{"line":11,"character":1},"end":{"line":11,"character":13}},"selectionRange":{"start":{"line":11,"character":1},"end":{"line":11,"character":6}}}]}]`
	got, err := DecodeSymbols(json.RawMessage(doc), "/w/store.go")
	want := []codeintel.Symbol{{Name: "Store", Kind: codeintel.KindStruct, Detail: "struct{...}",
		Location: codeintel.Location{Path: "/w/store.go", Range: rng(10, 5, 12, 1)}, Selection: rng(10, 5, 10, 10),
		Children: []codeintel.Symbol{{Name: "items", Kind: codeintel.KindField, Location: codeintel.Location{Path: "/w/store.go", Range: rng(11, 1, 11, 13)}, Selection: rng(11, 1, 11, 6)}}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DocumentSymbol[]: got %+v, %v", got, err)
	}
	info := `[{"name":"Greet","kind":12,"containerName":"example.com/shop/greet","location":{"uri":"file:///w/greet/greet.go","range":{"start":{"line":15,"character":5},"end":{"line":15,"character":10}}}},
	  {"name":"Total","kind":6,"location":{"uri":"file:///w/store.ts"}}]`
	got, err = DecodeSymbols(json.RawMessage(info), "")
	want = []codeintel.Symbol{
		{Name: "Greet", Kind: codeintel.KindFunction, Container: "example.com/shop/greet", Location: codeintel.Location{Path: "/w/greet/greet.go", Range: rng(15, 5, 15, 10)}},
		{Name: "Total", Kind: codeintel.KindMethod, Location: codeintel.Location{Path: "/w/store.ts"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("SymbolInformation[] and WorkspaceSymbol[]: got %+v, %v", got, err)
	}
}

func TestDecodeCalls(t *testing.T) {
	item := `{"name":"main","kind":12,"detail":"example.com/shop","uri":"file:///w/main.go","range":{"start":{"line":9,"character":0},"end":{"line":15,"character":1}},"selectionRange":{"start":{"line":9,"character":5},"end":{"line":9,"character":9}}}`
	got, err := DecodeIncomingCalls(json.RawMessage(`[{"from":` + item + `,"fromRanges":[{"start":{"line":14,"character":19},"end":{"line":14,"character":24}}]}]`))
	want := []codeintel.Call{{
		Symbol: codeintel.Symbol{Name: "main", Kind: codeintel.KindFunction, Detail: "example.com/shop", Location: codeintel.Location{Path: "/w/main.go", Range: rng(9, 0, 15, 1)}, Selection: rng(9, 5, 9, 9)},
		Sites:  []codeintel.Location{{Path: "/w/main.go", Range: rng(14, 19, 14, 24)}},
	}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("incoming: got %+v, %v", got, err)
	}
	// Outgoing calls are made in the function asked about.
	got, err = DecodeOutgoingCalls(json.RawMessage(`[{"to":`+item+`,"fromRanges":[{"start":{"line":1,"character":2},"end":{"line":1,"character":3}}]}]`), "file:///w/greet/greet.go")
	if err != nil || len(got) != 1 || got[0].Sites[0].Path != "/w/greet/greet.go" {
		t.Errorf("outgoing: got %+v, %v", got, err)
	}
	if uri, err := CallItemURI(json.RawMessage(item)); err != nil || uri != "file:///w/main.go" {
		t.Errorf("the item's URI: %q, %v", uri, err)
	}
}

func TestURIs(t *testing.T) {
	for _, p := range []string{"/w/a.go", "/w/a b#c%d.go", "/w/é.go"} {
		if got := PathOf(URI(p)); got != p {
			t.Errorf("%s → %s → %s", p, URI(p), got)
		}
	}
	if got := PathOf("untitled:Untitled-1"); got != "" {
		t.Errorf("untitled: %q", got)
	}
}

// FuzzScanLocations: what scanLocations reads, it reads as encoding/json
// does; what it declines, encoding/json reads (or refuses) instead.
func FuzzScanLocations(f *testing.F) {
	for _, seed := range []string{
		`[]`, ` [ ] `, `null`, `{}`,
		`[{"uri":"file:///w/a%20b.go","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}},{"uri":"file:///usr/lib/go/src/fmt/print.go","range":{"start":{"line":9,"character":5},"end":{"line":9,"character":12}}}]`,
		"[ {\n \"range\" : {\"end\":{\"character\":5,\"line\":1},\"start\":{\"character\":2,\"line\":1}}, \"uri\":\"file:///w/a.go\"}\t]",
		`[{"uri":"jdt://contents/java.base/String.class","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}]`,
		`[{"uri":"file:///w/\u00e9.go","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}}]`,
		`[{"uri":"file:///w/é.go","range":{"start":{"line":1.0,"character":2},"end":{"line":1,"character":5}}}]`,
		`[{"URI":"file:///w/a.go","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}}]`,
		`[{"uri":"file:///w/a.go","uri":"file:///w/b.go","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}}]`,
		`[{"targetUri":"file:///w/b.ts","targetRange":{"start":{"line":3,"character":0},"end":{"line":6,"character":1}},"targetSelectionRange":{"start":{"line":3,"character":9},"end":{"line":3,"character":14}}}]`,
		`[{"uri":"file:///w/a.go","range":{"start":{"line":01,"character":-2},"end":{"line":1e2,"character":5}}}]`,
		`[{"uri":"file:///w/a.go","range":{"start":{"line":4294967295,"character":2},"end":{"line":1,"character":5}}}] x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := scanLocations(raw)
		if !ok {
			return
		}
		want, err := decodeLocationsJSON(raw)
		if err != nil {
			t.Fatalf("%q: read %+v; encoding/json refuses it: %v", raw, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: read %+v; encoding/json reads %+v", raw, got, want)
		}
	})
}

// manyLocations is gopls's answer for the references of a function used
// a thousand times in a hundred files.
func manyLocations() []byte {
	var b strings.Builder
	b.WriteString(`[{"uri":"file:///tmp/ws/greet/greet.go","range":{"start":{"line":15,"character":5},"end":{"line":15,"character":10}}}`)
	for p := range 20 {
		for f := range 5 {
			for i := range 10 {
				fmt.Fprintf(&b, `,{"uri":"file:///tmp/gemkit-bench-codeintel-1234567890/ws/gen/p%02d/f%d.go","range":{"start":{"line":%d,"character":38},"end":{"line":%d,"character":43}}}`, p, f, 4+2*i, 4+2*i)
			}
		}
	}
	b.WriteString("]")
	return []byte(b.String())
}

// BenchmarkDecodeLocations: gopls's thousand references (200 KB), read
// by encoding/json (the first way) and by scanLocations.
func BenchmarkDecodeLocations(b *testing.B) {
	raw := manyLocations()
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if locs, err := decodeLocationsJSON(raw); err != nil || len(locs) != 1001 {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if locs, err := decodeLocations(raw); err != nil || len(locs) != 1001 {
				b.Fatal(err)
			}
		}
	})
}

// gopls's answers take the fast way.
func TestScanLocationsGopls(t *testing.T) {
	for _, raw := range []string{string(manyLocations()), `[]`, `[{"uri":"file:///w/a%20b.go","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}]`} {
		if _, ok := scanLocations([]byte(raw)); !ok {
			t.Errorf("declined %.200s", raw)
		}
	}
}
