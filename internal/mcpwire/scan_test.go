package mcpwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// scanCases are the plain shapes Scan takes and the unusual ones it
// leaves to the decoder, beside readCases.
var scanCases = []struct {
	text string
	ok   bool // Scan takes it
}{
	{`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"ext__fs__read_file","arguments":{"path":"/a/b.go","head":40},"_meta":{"progressToken":"c2f1-1"}}}`, true},
	{` {"id" : "gemkit-direct-4" , "result" : {"content":[{"type":"text","text":"Echo: ünï \u003c\"x\""}]} ,"jsonrpc":"2.0"}` + "\n", true},
	{`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":[1,2.5e-3,-0,true,false,null]}}`, true},
	{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`, true},
	{`{"jsonrpc":"2.0","ID":9,"Method":"x","id":1,"method":"ping"}`, true},
	{`{}`, true},
	{`{"id":null,"result":null}`, true},
	// Left to the decoder: an escaped name (it may spell a member), a
	// member read twice (the last wins there), an escaped or null method,
	// text that is not JSON, not an object, or not UTF-8.
	{`{"jsonrpc":"2.0","i\u0064":1,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools\/list"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":null}`, false},
	{`{"jsonrpc":2,"id":1}`, false},
	{`{"jsonrpc":"2.0","id":01}`, false},
	{`{"jsonrpc":"2.0","id":1,}`, false},
	{`{"jsonrpc":"2.0","id":1} x`, false},
	{`{"jsonrpc":"2.0","id":"a` + "\x01" + `"}`, false},
	{`{"jsonrpc":"2.0","id":"` + "\xff" + `"}`, false},
	{`{"jsonrpc":"2.0","id":"\x"}`, false},
	{`[{"jsonrpc":"2.0","id":1}]`, false},
	{`{"a":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`, false},
	{`{"a":tru}`, false},
	{`{"a":1.}`, false},
	{`{"a":-}`, false},
	{`{"a":1e}`, false},
	{``, false},
}

// TestScan: Scan takes the plain shapes and leaves the others, and what
// it takes it reads as the decoder does.
func TestScan(t *testing.T) {
	for _, tc := range scanCases {
		m, ok := Scan([]byte(tc.text))
		if ok != tc.ok {
			t.Errorf("Scan(%s): ok %v, want %v", tc.text, ok, tc.ok)
		}
		if ok {
			checkScan(t, []byte(tc.text), m)
		}
	}
	// Read gives the same whichever way it went.
	for _, tc := range scanCases {
		m, err := Read([]byte(tc.text))
		d, derr := readDecoded([]byte(tc.text))
		if (err == nil) != (derr == nil) || err == nil && !sameMessage(m, d) {
			t.Errorf("Read(%s) = %+v, %v; the decoder %+v, %v", tc.text, m, err, d, derr)
		}
	}
}

// TestScanCopiesNothing: Scan's members are slices of its text, and
// Read's are not (a caller may keep them while the text is reused).
func TestScanCopiesNothing(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"x":1}}`)
	m, ok := Scan(line)
	if !ok || &m.Result[0] != &line[bytes.Index(line, []byte(`{"x"`))] {
		t.Fatalf("Scan's result is not a slice of the line: %v", ok)
	}
	r, err := Read(line)
	if err != nil {
		t.Fatal(err)
	}
	copy(line, bytes.Repeat([]byte("_"), len(line)))
	if string(r.Result) != `{"x":1}` || string(r.ID) != "1" {
		t.Errorf("Read's members changed with its text: %s %s", r.ID, r.Result)
	}
}

func TestScanParams(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{`{"name":"t","arguments":{"x":1},"_meta":{"progressToken":3}}`, true},
		{`{"cursor":"c2","Cursor":5}`, true},
		{`{"cursor":null}`, true},
		{`{"requestId":"gemkit-direct-3","reason":"x"}`, true},
		{`{"protocolVersion":"2025-06-18","capabilities":{}}`, true},
		{`{"name":"t","inputResponses":{},"requestState":"s"}`, true},
		{`{"name":"a","name":"b"}`, false},
		{`{"n\u0061me":"a"}`, false},
		{`{"name":"\u0061"}`, false},
		{`{"name":null}`, false},
		{`{"cursor":5}`, false},
		{`null`, false},
		{`[]`, false},
		{``, false},
	} {
		p, ok := ScanParams([]byte(tc.raw))
		if ok != tc.ok {
			t.Errorf("ScanParams(%s): ok %v, want %v", tc.raw, ok, tc.ok)
			continue
		}
		if ok {
			checkScanParams(t, []byte(tc.raw), p)
		}
	}
}

func TestScanProgressToken(t *testing.T) {
	for _, tc := range []struct {
		meta  string
		token any
		ok    bool
	}{
		{``, nil, true},
		{`{}`, nil, true},
		{`{"progressToken":"p-1"}`, "p-1", true},
		{`{"progressToken":42,"x":[1]}`, 42.0, true},
		{`{"progressToken":-7}`, -7.0, true},
		{`{"progressToken":null}`, nil, true},
		{`{"progressToken":-0}`, nil, false},
		{`{"progressToken":1.5}`, nil, false},
		{`{"progressToken":1234567890123456}`, nil, false},
		{`{"progressToken":"\u0041"}`, nil, false},
		{`{"progressToken":1,"progressToken":2}`, nil, false},
		{`null`, nil, false},
	} {
		token, ok := ScanProgressToken([]byte(tc.meta))
		if ok != tc.ok || ok && token != tc.token {
			t.Errorf("ScanProgressToken(%s) = %v, %v; want %v, %v", tc.meta, token, ok, tc.token, tc.ok)
		}
		if ok {
			checkScanToken(t, []byte(tc.meta), token)
		}
	}
}

// FuzzScan: whatever Scan, ScanParams and ScanProgressToken take, the
// decoder (go-sdk's, as Read used it alone) takes too and reads the
// same members from.
func FuzzScan(f *testing.F) {
	for _, c := range readCases {
		f.Add([]byte(c))
	}
	for _, c := range scanCases {
		f.Add([]byte(c.text))
	}
	for _, c := range []string{
		`{"name":"t","arguments":{"a":[1,{"b":"\n"}]},"_meta":{"progressToken":"x"}}`,
		`{"progressToken":12,"other":{"progressToken":"nested"}}`,
		`{"cursor":"abc","requestId":7,"protocolVersion":"2025-11-25"}`,
		`{"jsonrpc":"2.0","id":"gemkit-direct-1","result":{"content":[],"isError":true}}`,
	} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, ok := Scan(data); ok {
			checkScan(t, data, m)
		}
		if p, ok := ScanParams(data); ok {
			checkScanParams(t, data, p)
		}
		if token, ok := ScanProgressToken(data); ok {
			checkScanToken(t, data, token)
		}
	})
}

// checkScan: the decoder takes data and reads m from it.
func checkScan(t *testing.T, data []byte, m Message) {
	t.Helper()
	d, err := readDecoded(data)
	if err != nil {
		t.Fatalf("Scan took %q, the decoder refused it: %v", data, err)
	}
	if !sameMessage(m, d) {
		t.Fatalf("%q: Scan read %+v, the decoder %+v", data, m, d)
	}
}

func sameMessage(a, b Message) bool {
	return a.JSONRPC == b.JSONRPC && a.Method == b.Method && a.HasMethod == b.HasMethod &&
		bytes.Equal(a.ID, b.ID) && bytes.Equal(a.RawMethod, b.RawMethod) && bytes.Equal(a.Params, b.Params) &&
		bytes.Equal(a.Result, b.Result) && bytes.Equal(a.Error, b.Error)
}

// checkScanParams: the decoder takes raw as params and reads p from it.
func checkScanParams(t *testing.T, raw []byte, p Params) {
	t.Helper()
	d, err := readParamsDecoded(raw)
	if err != nil {
		t.Fatalf("ScanParams took %q, the decoder refused it: %v", raw, err)
	}
	same := p.Name == d.Name && p.ProtocolVersion == d.ProtocolVersion &&
		bytes.Equal(p.Arguments, d.Arguments) && bytes.Equal(p.Meta, d.Meta) &&
		bytes.Equal(p.InputResponses, d.InputResponses) && bytes.Equal(p.RequestState, d.RequestState) &&
		bytes.Equal(p.RequestID, d.RequestID) && reflect.DeepEqual(p.Cursor, d.Cursor)
	if !same {
		t.Fatalf("%q: ScanParams read %+v, the decoder %+v", raw, p, d)
	}
}

// checkScanToken: the decoder reads token as meta's progressToken.
func checkScanToken(t *testing.T, meta []byte, token any) {
	t.Helper()
	if len(meta) == 0 {
		if token != nil {
			t.Fatalf("a token %v from no _meta", token)
		}
		return
	}
	var d struct {
		ProgressToken any `json:"progressToken"`
	}
	if err := parse(meta, &d); err != nil {
		t.Fatalf("ScanProgressToken took %q, the decoder refused it: %v", meta, err)
	}
	if !reflect.DeepEqual(token, d.ProgressToken) {
		t.Fatalf("%q: ScanProgressToken read %#v, the decoder %#v", meta, token, d.ProgressToken)
	}
	if !json.Valid(meta) {
		t.Fatalf("ScanProgressToken took %q, which is not JSON", meta)
	}
}
