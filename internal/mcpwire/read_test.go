package mcpwire

import (
	"bytes"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readCases are lines a client or server sends, and lines near them.
var readCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`,
	// Members spelt otherwise are not the protocol's: the SDK ignores them.
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call","method":"tools/list"}`,
	`{"jsonrpc":"2.0","ID":9,"id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"METHOD":"ping"}`,
	// The last of two members of one name wins, as in the SDK.
	`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
	// Escapes.
	`{"jsonrpc":"2.0","id":"a\u003cb","method":"tools\/list"}`,
	`{"jsonrpc":"2.0","id":"a\u2028b\u0001&","method":"ping"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":123456789012345678,"method":"ping"}`,
	// Not messages the SDK takes.
	`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"} {"x":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":}}`,
	`not json`,
	``,
}

// TestReadAgreesWithSDK: what Read takes, go-sdk's decoder takes with
// the same method and id, and what it refuses (as JSON), the SDK
// refuses; a method or id spelt in another case is not read as one.
func TestReadAgreesWithSDK(t *testing.T) {
	for _, line := range readCases {
		m, err := Read([]byte(line))
		got, sdkErr := sdk.DecodeMessage([]byte(line))
		if err != nil {
			// Text after the message: DecodeMessage reads the first
			// value, but the SDK's stdio transport refuses the line
			// ("invalid trailing data"), and so does Read.
			if sdkErr == nil && !bytes.Contains([]byte(line), []byte("} {")) {
				t.Errorf("%s: Read refused it (%v), the SDK took it", line, err)
			}
			continue
		}
		if sdkErr != nil {
			// The SDK checks JSON-RPC too; Read leaves that to its caller.
			if m.JSONRPC == "2.0" && validID(m.ID) {
				t.Errorf("%s: Read took a 2.0 message with a valid id, the SDK refused it: %v", line, sdkErr)
			}
			continue
		}
		switch g := got.(type) {
		case *sdk.Request:
			if !m.HasMethod || m.Method != g.Method || !bytes.Equal(m.Params, g.Params) {
				t.Errorf("%s: Read %q %v %s, the SDK %q %s", line, m.Method, m.HasMethod, m.Params, g.Method, g.Params)
			}
			checkID(t, line, m, g.ID)
		case *sdk.Response:
			if m.HasMethod {
				t.Errorf("%s: Read a method %q in a response", line, m.Method)
			}
			checkID(t, line, m, g.ID)
		}
	}
}

func validID(raw json.RawMessage) bool {
	var v any
	if len(raw) == 0 {
		return true
	}
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	_, err := sdk.MakeID(v)
	return err == nil
}

// checkID: WireID is what the SDK writes back for the id it read.
func checkID(t *testing.T, line string, m Message, id sdk.ID) {
	t.Helper()
	wire, ok := m.WireID()
	if !id.IsValid() {
		if ok {
			t.Errorf("%s: WireID %s for no id", line, wire)
		}
		return
	}
	out, err := sdk.EncodeMessage(&sdk.Response{ID: id, Result: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ ID json.RawMessage }
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if !ok || !bytes.Equal(wire, back.ID) {
		t.Errorf("%s: WireID %s %v, the SDK writes back %s", line, wire, ok, back.ID)
	}
}

func TestWireID(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{`1`, `1`, true},
		{`0`, `0`, true},
		{`-0`, `0`, true},
		{`1.9`, `1`, true},
		{`1e3`, `1000`, true},
		{`"x"`, `"x"`, true},
		{`"a<b"`, `"a<b"`, true},
		{`"a\u2028b"`, `"a\u2028b"`, true},
		{`"\u0041"`, `"A"`, true},
		{`"é"`, `"é"`, true},
		{`null`, ``, false},
		{``, ``, false},
		{`true`, ``, false},
		{`[1]`, ``, false},
	} {
		got, ok := WireID([]byte(tc.raw))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("WireID(%s) = %s, %v; want %s, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		err   bool
		name  string
		plain bool
		token any
	}{
		{``, false, "", true, nil},
		{`{"name":"t","arguments":{"x":1}}`, false, "t", true, nil},
		{`{"Name":"other","name":"t"}`, false, "t", true, nil},
		{`{"name":"t","_meta":{"progressToken":3}}`, false, "t", true, 3.0},
		{`{"name":"t","_meta":{"progressToken":"p"}}`, false, "t", true, "p"},
		{`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, false, "t", false, nil},
		{`{"name":"t","inputResponses":{}}`, false, "t", false, nil},
		{`{"name":"t","requestState":"s"}`, false, "t", false, nil},
		{`null`, true, "", true, nil},
		{`[]`, true, "", true, nil},
		{`{"name":5}`, true, "", true, nil},
	} {
		p, err := ReadParams([]byte(tc.raw))
		if (err != nil) != tc.err {
			t.Errorf("ReadParams(%s): %v", tc.raw, err)
			continue
		}
		if err != nil {
			continue
		}
		token, terr := p.ProgressToken()
		if p.Name != tc.name || p.Plain() != tc.plain || terr != nil || token != tc.token {
			t.Errorf("ReadParams(%s) = name %q plain %v token %v (%v)", tc.raw, p.Name, p.Plain(), token, terr)
		}
	}
}

func TestRevisions(t *testing.T) {
	if got := Revisions(); got[0] != Latest {
		t.Errorf("Revisions()[0] = %s, want Latest %s", got[0], Latest)
	}
	for _, tc := range []struct {
		v                          string
		supported, skip, stateless bool
	}{
		{Revision20241105, true, true, false},
		{Revision20250618, true, true, false},
		{Revision20251125, true, true, false},
		{Revision20260728, false, false, true},
		{"2024-10-07", false, true, false},
		{"", false, false, false},
	} {
		if Supported(tc.v) != tc.supported || MaySkipSDK(tc.v) != tc.skip || IsStateless(tc.v) != tc.stateless {
			t.Errorf("%q: Supported %v MaySkipSDK %v IsStateless %v", tc.v, Supported(tc.v), MaySkipSDK(tc.v), IsStateless(tc.v))
		}
	}
	if got := Negotiate("2099-01-01", Revision20250618); got != Revision20250618 {
		t.Errorf("Negotiate(unknown) = %s", got)
	}
	if got := Negotiate(Revision20251125, Revision20250618); got != Revision20251125 {
		t.Errorf("Negotiate(known) = %s", got)
	}
}

// FuzzRead: what Read takes is JSON, and a method it reads is the SDK's.
func FuzzRead(f *testing.F) {
	for _, c := range readCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Read took %q, which is not JSON", data)
		}
		if got, err := sdk.DecodeMessage(data); err == nil {
			if r, ok := got.(*sdk.Request); ok && (r.Method != m.Method) {
				t.Fatalf("%q: Read method %q, the SDK %q", data, m.Method, r.Method)
			}
		}
	})
}
