package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

var cases = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+3`, `true`, `false`, `null`,
	`{"a":[1,{"b":"c\u00e9\n"}],"d":null}`,
	` {"a" : 1 } `,
	`"aaaaaaaaaaaaaaaaaaaa\"bbbbbbbbbbbbbb"`,
	`01`, `1.`, `-`, `1e`, `tru`, `{"a":1,}`, `[1,]`, `{"a"}`, `"\x"`, `"\u12"`,
	"\"a\x01b\"", `{"a":1} x`, ``, `"`, `[`,
	strings.Repeat("[", 10) + strings.Repeat("]", 10),
}

// check is whether c takes text whole, as one value.
func check(text string, maxDepth int) bool {
	c := NewChecker([]byte(text), maxDepth)
	c.Space()
	return c.Value(0) && c.End()
}

func TestChecker(t *testing.T) {
	for _, text := range cases {
		if got, want := check(text, 100), json.Valid([]byte(text)); got != want {
			t.Errorf("%q: checked %v, encoding/json %v", text, got, want)
		}
	}
	deep := strings.Repeat("[", 11) + strings.Repeat("]", 11)
	if check(deep, 10) {
		t.Error("a value nested 11 deep was taken with a bound of 10")
	}
	if !check(deep, 11) {
		t.Error("a value nested 11 deep was refused with a bound of 11")
	}
}

// FuzzChecker: what the Checker takes, encoding/json takes; what it
// refuses within its depth, encoding/json refuses.
func FuzzChecker(f *testing.F) {
	for _, c := range cases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := check(text, 10000), json.Valid([]byte(text))
		if got != want {
			t.Fatalf("%q: checked %v, encoding/json %v", text, got, want)
		}
	})
}
