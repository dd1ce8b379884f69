package extension

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEachFieldMatchesDecoder checks the quick key walk against
// encoding/json on objects with nesting, escapes and odd spacing.
func TestEachFieldMatchesDecoder(t *testing.T) {
	for _, doc := range []string{
		`{}`,
		` { } `,
		`{"a":1}`,
		"{\n\t\"a\" :\r\n 1 , \"b\":\"x\"\n}",
		`{"a":"}\"{[","b":{"c":[1,{"d":"]"}],"e":null},"f":[],"g":true,"h":-1.5e3}`,
		`{"n\u0061me":"escaped key","q\"k":"quote in key","back\\slash":0}`,
		`{"dup":1,"dup":2}`,
		`{"s":"\\","t":"\\\""}`,
	} {
		want := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		got := map[string]json.RawMessage{}
		if !eachField([]byte(doc), func(k string, raw json.RawMessage) { got[k] = raw }) {
			t.Errorf("%s: eachField says it is not an object", doc)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", doc, got, want)
		}
	}
	for _, doc := range []string{`[]`, `"x"`, `null`, `1`} {
		if eachField([]byte(doc), func(string, json.RawMessage) {}) {
			t.Errorf("%s: eachField says it is an object", doc)
		}
	}
}

// FuzzEachField checks the key walk against encoding/json on any object
// encoding/json accepts (go test -fuzz FuzzEachField explores further).
func FuzzEachField(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1,"b":[{"c":"}"}]}`, `{"\u00e9\"":"x\\"}`, "{\"k\" : \"v\" , \"n\":null}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		want := map[string]json.RawMessage{}
		if json.Unmarshal([]byte(doc), &want) != nil || want == nil {
			return
		}
		got := map[string]json.RawMessage{}
		if !eachField([]byte(doc), func(k string, raw json.RawMessage) { got[k] = raw }) {
			t.Fatalf("%q: not an object to eachField", doc)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", doc, got, want)
		}
	})
}

// TestEachElementMatchesDecoder checks the quick element walk against
// encoding/json.
func TestEachElementMatchesDecoder(t *testing.T) {
	for _, doc := range []string{
		`[]`, ` [ ] `, `[1]`, "[\n 1 ,\t\"a\" , null,true ]",
		`["]\"[",{"a":[1,"]"]},[[],{}],-1.5e3]`,
	} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		got := []json.RawMessage{}
		if !eachElement([]byte(doc), func(raw json.RawMessage) { got = append(got, raw) }) {
			t.Errorf("%s: eachElement says it is not an array", doc)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", doc, got, want)
		}
	}
	for _, doc := range []string{`{}`, `"x"`, `null`, `1`, ``} {
		if eachElement([]byte(doc), func(json.RawMessage) {}) {
			t.Errorf("%q: eachElement says it is an array", doc)
		}
	}
}
