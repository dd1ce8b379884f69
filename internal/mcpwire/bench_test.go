package mcpwire

import (
	"encoding/json"
	"testing"
)

// callLine is a tools/call as Gemini CLI sends one, with a progress
// token and a few arguments.
var callLine = []byte(`{"method":"tools/call","params":{"name":"ext__fs__read_file","arguments":{"path":"/home/u/project/src/main.go","head":40,"tail":0},"_meta":{"progressToken":"c2f1e0a4-1"}},"jsonrpc":"2.0","id":17}` + "\n")

// BenchmarkRead reads a tools/call's method, id, name, arguments and
// progress token: with Read and ReadParams, with go-sdk's decoder alone
// (as Read read before Scan), with the one-pass Scan, ScanParams and
// ScanProgressToken, and, as the references in
// the same run, as the fast paths read it before (encoding/json into
// maps, each member by its exact name) and as the companion read it
// (encoding/json into structs, which also takes "Method" for "method").
func BenchmarkRead(b *testing.B) {
	b.Run("mcpwire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := Read(callLine)
			if err != nil || !m.Is("tools/call") {
				b.Fatal(err)
			}
			p, err := ReadParams(m.Params)
			if err != nil || p.Name == "" {
				b.Fatal(err)
			}
			if _, ok := m.WireID(); !ok {
				b.Fatal("id")
			}
			if tok, err := p.ProgressToken(); err != nil || tok == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := readDecoded(callLine)
			if err != nil || !m.Is("tools/call") {
				b.Fatal(err)
			}
			p, err := readParamsDecoded(m.Params)
			if err != nil || p.Name == "" {
				b.Fatal(err)
			}
			if _, ok := m.WireID(); !ok {
				b.Fatal("id")
			}
			var meta struct {
				ProgressToken any `json:"progressToken"`
			}
			if err := Decode(p.Meta, &meta); err != nil || meta.ProgressToken == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, ok := Scan(callLine)
			if !ok || !m.Is("tools/call") {
				b.Fatal("scan")
			}
			p, ok := ScanParams(m.Params)
			if !ok || p.Name == "" {
				b.Fatal("scan params")
			}
			if _, ok := m.WireID(); !ok {
				b.Fatal("id")
			}
			if tok, ok := ScanProgressToken(p.Meta); !ok || tok == nil {
				b.Fatal("token")
			}
		}
	})
	b.Run("encoding-json-structs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
			}
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				Meta      struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			}
			if json.Unmarshal(callLine, &m) != nil || json.Unmarshal(m.Params, &p) != nil || p.Name == "" {
				b.Fatal("decode")
			}
		}
	})
	b.Run("encoding-json-maps", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var top, params, meta map[string]json.RawMessage
			var method, name, version string
			var id, token any
			if json.Unmarshal(callLine, &top) != nil || json.Unmarshal(top["method"], &method) != nil ||
				json.Unmarshal(top["jsonrpc"], &version) != nil || json.Unmarshal(top["params"], &params) != nil ||
				json.Unmarshal(params["name"], &name) != nil || json.Unmarshal(top["id"], &id) != nil ||
				json.Unmarshal(params["_meta"], &meta) != nil || json.Unmarshal(meta["progressToken"], &token) != nil {
				b.Fatal("decode")
			}
		}
	})
}
