package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"
)

// quickCases are messages and texts near them: quickMessage takes the
// first (want true), and declines or agrees with encoding/json on the
// rest.
var quickCases = []struct {
	body string
	want bool
}{
	{`{"jsonrpc":"2.0","id":1,"result":[{"uri":"file:///a.go","range":{"start":{"line":0,"character":1},"end":{"line":0,"character":2}}}]}`, true},
	{`{"jsonrpc":"2.0","id":"a\"b","method":"text/\u00e9","params":{"x":[1,-2.5e+3,0.0,true,false,null,"\\"]}}`, true},
	{` { "jsonrpc" : "2.0" , "method" : "m" , "extra" : {"a":[]} } `, true},
	{`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found","data":{"x":1}}}`, true},
	{`{"jsonrpc":"2.0","id":null,"result":null,"error":null}`, true},
	{`{}`, true},
	{`{"Method":"m"}`, false},              // matched without regard to case
	{`{"method":"a","method":"b"}`, false}, // repeated
	{`{"method":1}`, false},                // the wrong type
	{`{"error":[]}`, false},                // the wrong type
	{`{"me\u0074hod":"m"}`, false},         // an escape in a name
	{`{"method":"m",}`, false},             // not JSON
	{`{"id":01}`, false},                   // not JSON
	{`{"id":1.}`, false},                   // not JSON
	{`{"id":-}`, false},                    // not JSON
	{`{"params":"\x"}`, false},             // not JSON
	{"{\"params\":\"a\tb\"}", false},       // a control character
	{`{"params":"\ud800"}`, true},          // JSON; CheckJSONText refuses it
	{"{\"params\":\"\xff\"}", true},        // JSON; CheckJSONText refuses it
	{`{"params":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`, true},
	{`{"params":tru}`, false},
	// Long strings, read eight bytes at a time.
	{`{"params":"abcdefghijklmnop\"qrstuvwxyz\\"}`, true},
	{"{\"params\":\"abcdefghijklmno\tpqrstuvwxyz\"}", false},
	{"{\"params\":\"abcdefghijklmnop\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9 \x7f\"}", true},
	{`{"params":"abcdefghijklmnopqrstuvwxyz`, false},
	{`{"params":1} x`, false},
}

func TestQuickMessage(t *testing.T) {
	for _, tc := range quickCases {
		var m message
		if got := quickMessage([]byte(tc.body), &m); got != tc.want {
			t.Errorf("quickMessage(%s) = %v, want %v", tc.body, got, tc.want)
		}
		checkQuick(t, []byte(tc.body))
	}
}

// checkQuick fails when quickMessage takes body and encoding/json
// refuses it or reads it otherwise.
func checkQuick(t *testing.T, body []byte) {
	t.Helper()
	var quick message
	if !quickMessage(body, &quick) {
		return
	}
	if !json.Valid(body) {
		t.Fatalf("quickMessage took %q, which is not JSON", body)
	}
	var std message
	if err := json.Unmarshal(body, &std); err != nil {
		t.Fatalf("quickMessage took %q, which json.Unmarshal refuses: %v", body, err)
	}
	if !reflect.DeepEqual(quick, std) {
		t.Fatalf("%q: quickMessage read %+v, json.Unmarshal %+v", body, quick, std)
	}
}

func FuzzQuickMessage(f *testing.F) {
	for _, tc := range quickCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(checkQuick)
}

// TestRawResult: a json.RawMessage result is written as it is, save one
// with a line break, which json.Marshal compacts; a result that reads
// itself is handed the text as read, and its error is the call's.
func TestRawResult(t *testing.T) {
	answers := map[string]json.RawMessage{
		"plain":    json.RawMessage(`[{"a":"<b>"}, 1]`),
		"indented": json.RawMessage("[\n  1,\n  2\n]"),
		"string":   json.RawMessage(`"x"`),
	}
	e := newEnd(t, Options{}, HandlerFunc(func(_ context.Context, r Request) (any, error) {
		return answers[r.Method], nil
	}))
	for _, tt := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"plain"}`, `{"jsonrpc":"2.0","id":1,"result":[{"a":"<b>"}, 1]}`},
		{`{"jsonrpc":"2.0","id":"<2>","method":"plain"}`, `{"jsonrpc":"2.0","id":"\u003c2\u003e","result":[{"a":"\u003cb\u003e"},1]}`},
		{`{"jsonrpc":"2.0","id":3,"method":"indented"}`, `{"jsonrpc":"2.0","id":3,"result":[1,2]}`},
		{`{"jsonrpc":"2.0","id":4,"method":"string"}`, `{"jsonrpc":"2.0","id":4,"result":"x"}`},
		{`{"jsonrpc":"2.0","id":5,"method":"none"}`, `{"jsonrpc":"2.0","id":5,"result":null}`},
	} {
		e.send(tt.send)
		if got := e.next(); got != tt.want {
			t.Errorf("%s answered\n%s, want\n%s", tt.send, got, tt.want)
		}
	}
}

// selfReader is a result that reads itself.
type selfReader struct{ got string }

func (s *selfReader) UnmarshalJSON(b []byte) error {
	if string(b) == `"refuse"` {
		return errors.New("refused")
	}
	s.got = string(b)
	return nil
}

func TestUnmarshalerResult(t *testing.T) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	t.Cleanup(func() { cw.Close(); sw.Close() })
	quiet := Options{Logger: slog.New(slog.DiscardHandler)}
	server := NewConn(sr, sw, quiet)
	go server.Run(context.Background(), HandlerFunc(func(_ context.Context, r Request) (any, error) {
		return json.RawMessage(r.Params), nil
	}))
	client := NewConn(cr, cw, quiet)
	go client.Run(context.Background(), HandlerFunc(func(context.Context, Request) (any, error) { return nil, nil }))
	var s selfReader
	if err := client.Call(context.Background(), waitTimeout, "echo", json.RawMessage(`{"x": [1, "y"]}`), &s); err != nil || s.got != `{"x":[1,"y"]}` {
		t.Fatalf("read %q, %v", s.got, err)
	}
	err := client.Call(context.Background(), waitTimeout, "echo", "refuse", &s)
	if err == nil || err.Error() != "peer's answer to echo: refused" {
		t.Fatalf("a result that refused its text: %v", err)
	}
}
