package agent

import (
	"strings"
	"testing"
)

func TestParseText(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		want  []string // "name args" or "!problem substring"
	}{
		{"none", "Just an answer.", nil},
		{"json", `<tool_code>{"name": "x_y", "args": {"a": 1}}</tool_code>`, []string{`x_y {"a": 1}`}},
		{"arguments key", `<tool_code>{"name": "x", "arguments": {"a": "b"}}</tool_code>`, []string{`x {"a": "b"}`}},
		{"call form", `<tool_code>x_y({"a": 1})</tool_code>`, []string{`x_y {"a": 1}`}},
		{"bare name", "<tool_code> list_files </tool_code>", []string{"list_files {}"}},
		// The extension plan's form (section 4.3: `lintFile(file: string)`),
		// as the manifests' examples write a call.
		{"keyword form", `<tool_code>sayHello(name="Ada")</tool_code>`, []string{`sayHello {"name":"Ada"}`}},
		{"keyword values", `<tool_code>x(path='a b.go', n=2, loud=True, tags=["a"], opt=None, s="q\"t\n")</tool_code>`,
			[]string{`x {"loud":true,"n":2,"opt":null,"path":"a b.go","s":"q\"t\n","tags":["a"]}`}},
		{"colon form", `<tool_code>lintFile(file: "a.go")</tool_code>`, []string{`lintFile {"file":"a.go"}`}},
		{"unquoted word", `<tool_code>sayHello(name=Ada)</tool_code>`, []string{"!quote strings"}},
		{"positional", `<tool_code>sayHello("Ada")</tool_code>`, []string{"!not a JSON object"}},
		{"positional pair", `<tool_code>sayHello("Ada", 2)</tool_code>`, []string{"!name=value"}},
		{"unclosed string", `<tool_code>sayHello(name="Ada)</tool_code>`, []string{"!not closed"}},
		{"twice", `<tool_code>f(a=1, a=2)</tool_code>`, []string{"!twice"}},
		{"fenced", "<tool_code>\n```json\n{\"name\": \"a\"}\n```\n</tool_code>", []string{"a {}"}},
		{"two", `<tool_code>a</tool_code> text <read_doc>ext/doc</read_doc>`, []string{"a {}", `read_doc {"extension":"ext","name":"doc"}`}},
		{"doc alone", `<read_doc>guide</read_doc>`, []string{`read_doc {"extension":"","name":"guide"}`}},
		{"bad json", `<tool_code>{"name": </tool_code>`, []string{"!not valid JSON"}},
		{"no name", `<tool_code>{"args": {}}</tool_code>`, []string{`!has no "name"`}},
		{"args not object", `<tool_code>a([1])</tool_code>`, []string{"!not a JSON object"}},
		{"unclosed paren", `<tool_code>a({"x": 1}</tool_code>`, []string{"!parenthesis"}},
		{"bad name", `<tool_code>rm -rf /</tool_code>`, []string{"!is not a tool name"}},
		{"empty", `<tool_code></tool_code>`, []string{"!empty"}},
		{"empty doc", `<read_doc> </read_doc>`, []string{"!empty"}},
		{"mismatched", `<tool_code>a</read_doc>`, []string{"!closed with"}},
		{"unclosed", `ok <tool_code>{"name": "a"}`, []string{"!not closed"}},
		{"unclosed after good", `<tool_code>a</tool_code><read_doc>x`, []string{"a {}", "!not closed"}},
		{"binary junk", "<tool_code>\x00\xff</tool_code>", []string{"!is not a tool name"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseText(c.reply)
			if len(got) != len(c.want) {
				t.Fatalf("%d blocks, want %d: %+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				g := got[i]
				if p, ok := strings.CutPrefix(w, "!"); ok {
					if !strings.Contains(g.Problem, p) {
						t.Errorf("block %d: problem %q, want %q", i, g.Problem, p)
					}
					continue
				}
				if g.Problem != "" || g.Name+" "+string(g.Args) != w {
					t.Errorf("block %d: %q %s (problem %q), want %s", i, g.Name, g.Args, g.Problem, w)
				}
			}
		})
	}
}

func FuzzParseText(f *testing.F) {
	f.Add(`<tool_code>{"name": "a", "args": {}}</tool_code>`)
	f.Add(`<read_doc>a/b</read_doc><tool_code>x(`)
	f.Add(`<tool_code>say(name='A\'da', n=1.5, on=True, x={"y": [1]})</tool_code>`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range parseText(s) {
			if c.Problem == "" && c.Name == "" {
				t.Fatalf("a call without a name or a problem: %+v", c)
			}
		}
	})
}
