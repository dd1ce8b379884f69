package ide

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// plainResult is LSPRequestResult as encoding/json reads and writes it.
type plainResult LSPRequestResult

var requestResults = []string{
	`{"clients":["gopls"],"answers":[{"client":"gopls","result":[{"uri":"file:///a.go","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":3}}}]}]}`,
	`{"clients":["a\"b","c"],"answers":[{"client":"a\"b","error":{"code":-32803,"message":"x <y>"}},{"client":"c","result":null}],"reason":"r"}`,
	` { "answers" : [ ] , "clients" : [ ] , "other" : {"answers": 1} } `,
	`{"clients":null,"answers":null}`,
	`{"clients":[],"answers":[{"client":"x","result":"a\\\"}]"},{"result":{"k":[1,{"a":"]"}]},"client":"y"}]}`,
	`{"Clients":["x"],"answers":[]}`,                  // encoding/json's way: any case
	`{"clients":["x"],"clients":["y"]}`,               // repeated
	`{"clients":["x"],"answers":[null]}`,              // a null answer
	`{"clients":["x"],"answers":[{"Result":1}]}`,      // any case
	`{"clients":["x"],"answers":[{"re\u0073ult":1}]}`, // an escape in a name
	`{"clients":1}`, // the wrong type
	`null`,
	`{"clients":["x"],"answers":[{"client":"x","result":["a string of more than eight bytes, with \" and \\\" and ]} in it","and another, \\"]}]}`,
}

func TestLSPRequestResultJSON(t *testing.T) {
	for _, text := range requestResults {
		checkRequestResult(t, []byte(text))
	}
	var r LSPRequestResult
	text := requestResults[0]
	if !readRequestResult([]byte(text), &r) || string(r.Answers[0].Result) != text[strings.Index(text, `"result":`)+9:len(text)-3] {
		t.Fatalf("a plain answer was not read by skipping it: %+v", r)
	}
}

// checkRequestResult fails when LSPRequestResult reads or writes text
// otherwise than encoding/json does the struct.
func checkRequestResult(t *testing.T, text []byte) {
	t.Helper()
	if !json.Valid(text) {
		return
	}
	var want plainResult
	wantErr := json.Unmarshal(text, &want)
	var got LSPRequestResult
	gotErr := json.Unmarshal(text, &got)
	if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(LSPRequestResult(want), got) {
		t.Fatalf("%s: read %+v (%v), encoding/json %+v (%v)", text, got, gotErr, want, wantErr)
	}
	// Called directly, as internal/jsonrpc does with a checked text.
	var direct LSPRequestResult
	if err := direct.UnmarshalJSON(text); (err == nil) != (wantErr == nil) || !reflect.DeepEqual(direct, got) {
		t.Fatalf("%s: UnmarshalJSON read %+v (%v), json.Unmarshal %+v", text, direct, err, got)
	}
	if gotErr != nil {
		return
	}
	w, werr := json.Marshal(want)
	g, gerr := json.Marshal(got)
	if string(g) != string(w) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: wrote %s (%v), encoding/json %s (%v)", text, g, gerr, w, werr)
	}
	if werr != nil {
		return
	}
	raw, err := got.MarshalJSON()
	if err != nil || !json.Valid(raw) || strings.Contains(string(raw), "\n") != strings.Contains(string(w), "\n") {
		t.Fatalf("%s: MarshalJSON wrote %s (%v)", text, raw, err)
	}
}

func FuzzLSPRequestResult(f *testing.F) {
	for _, text := range requestResults {
		f.Add([]byte(text))
	}
	f.Fuzz(checkRequestResult)
}

// BenchmarkReadRequestResult: lsp/request's answer of a thousand
// references (150 KB), read as internal/jsonrpc hands it over.
func BenchmarkReadRequestResult(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"clients":["gopls"],"answers":[{"client":"gopls","result":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"uri":"file:///home/u/src/shop/pkg%02d/file%d.go","range":{"start":{"line":%d,"character":12},"end":{"line":%d,"character":17}}}`, i/50, i%5, i, i)
	}
	sb.WriteString(`]}]}`)
	text := []byte(sb.String())
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var r LSPRequestResult
		if err := r.UnmarshalJSON(text); err != nil {
			b.Fatal(err)
		}
	}
}
