package mcpserver

import (
	"testing"
)

// TestDecodeCall: the fast path reads a tools/call's members by their
// exact names, as the SDK does: a "Name" or "ID" in another case is not
// taken for the one a reader of the line sees.
func TestDecodeCall(t *testing.T) {
	for _, tc := range []struct {
		line, name, id string
		ok             bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","arguments":{}}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","Name":"b_other"}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"b_other"}}`, "", "1", true},
		{`{"jsonrpc":"2.0","ID":7,"id":1,"method":"tools/call","params":{"name":"a_echo"}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a_echo"}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, "", "", false},
		{`not json`, "", "", false},
	} {
		req, ok := decodeCall([]byte(tc.line))
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.line, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		name := ""
		if req.Params != nil {
			name = req.Params.Name
		}
		if name != tc.name || string(req.ID) != tc.id {
			t.Errorf("%s: name %q id %s, want %q %s", tc.line, name, req.ID, tc.name, tc.id)
		}
		if tc.line == `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a_echo"}}` && req.Method != "" {
			t.Errorf("%s: method %q taken from \"Method\"", tc.line, req.Method)
		}
	}
	var calls fastCalls
	calls.start([]byte("1"), func() {})
	(&Server{}).cancelled(&calls, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":1}}`))
	if !calls.end([]byte("1")) {
		t.Error(`"RequestId" cancelled the call of id 1`)
	}
}
