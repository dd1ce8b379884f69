package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The text protocol (section 4.3 of the extension plan) is for models
// without function calling: the model writes
//
//	<tool_code>{"name": "TOOL", "args": {...}}</tool_code>
//	<read_doc>EXTENSION/DOC</read_doc>
//	<read_doc>EXTENSION/skill:SKILL</read_doc>
//
// and gemkit answers with <tool_result> blocks in the next user message.
// The plan's own call form, TOOL(arg="value", n=2), which the summary's
// signatures and examples show the model, is read too, as are TOOL(JSON)
// and a bare TOOL; code fences around a block are ignored, since models
// write all of these.

// textInstructions tells the model how to call tools in the text
// protocol; it follows the tool list in the system prompt.
const textInstructions = `This conversation has no function calling. To use a tool, write a block on its own, then stop and wait for the result:
<tool_code>{"name": "TOOL_NAME", "args": {"ARG": "VALUE"}}</tool_code>
or, as the examples write it, <tool_code>TOOL_NAME(ARG="VALUE")</tool_code>.
To read a doc, write <read_doc>EXTENSION/DOC</read_doc>; to read a skill's instructions, <read_doc>EXTENSION/skill:SKILL</read_doc>.
You may write several blocks in one reply. The results come back in <tool_result> blocks. When you need no tool, answer normally without blocks.`

// textCall is one block parsed from a reply: a call, or a problem to
// tell the model about.
type textCall struct {
	Name string
	Args json.RawMessage
	// Problem is set when the block could not be understood; it is what
	// the model is told.
	Problem string
	// Raw is the block as written, cut, for messages.
	Raw string
}

var blockRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)<(tool_code|read_doc)>(.*?)</(tool_code|read_doc)>`)
})
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_\-.]*$`) })

// parseText finds every block in a reply, in order. It never fails: a
// block it cannot read becomes a textCall with a Problem, and an opening
// tag without its closing tag is reported the same way.
func parseText(reply string) []textCall {
	var out []textCall
	last := 0
	for _, m := range blockRE().FindAllStringSubmatchIndex(reply, -1) {
		open, body, close := reply[m[2]:m[3]], reply[m[4]:m[5]], reply[m[6]:m[7]]
		raw := cut(reply[m[0]:m[1]], 200)
		last = m[1]
		if open != close {
			out = append(out, textCall{Raw: raw, Problem: fmt.Sprintf("a <%s> block was closed with </%s>; close each block with its own tag", open, close)})
			continue
		}
		if open == "read_doc" {
			out = append(out, parseReadDoc(body, raw))
			continue
		}
		out = append(out, parseToolCode(body, raw))
	}
	rest := reply[last:]
	for _, tag := range []string{"tool_code", "read_doc"} {
		if i := strings.Index(rest, "<"+tag+">"); i >= 0 {
			out = append(out, textCall{Raw: cut(rest[i:], 200),
				Problem: fmt.Sprintf("a <%s> block is not closed; end it with </%s>", tag, tag)})
		}
	}
	return out
}

func parseReadDoc(body, raw string) textCall {
	ref := strings.TrimSpace(stripFence(body))
	c := textCall{Name: readDocTool, Raw: raw}
	if ref == "" {
		c.Problem = "the <read_doc> block is empty; write <read_doc>EXTENSION/DOC</read_doc>"
		return c
	}
	ext, doc, ok := strings.Cut(ref, "/")
	if !ok {
		// A doc name alone: resolved against the summary by the caller.
		doc, ext = ref, ""
	}
	args, _ := json.Marshal(map[string]string{"extension": strings.TrimSpace(ext), "name": strings.TrimSpace(doc)})
	c.Args = args
	return c
}

func parseToolCode(body, raw string) textCall {
	s := strings.TrimSpace(stripFence(body))
	c := textCall{Raw: raw}
	bad := func(why string) textCall {
		c.Problem = why + `; write <tool_code>{"name": "TOOL_NAME", "args": {...}}</tool_code>`
		return c
	}
	if s == "" {
		return bad("the <tool_code> block is empty")
	}
	if strings.HasPrefix(s, "{") {
		var v struct {
			Name      string          `json:"name"`
			Args      json.RawMessage `json:"args"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return bad("the <tool_code> block is not valid JSON (" + err.Error() + ")")
		}
		if v.Args == nil {
			v.Args = v.Arguments
		}
		if v.Name == "" {
			return bad(`the <tool_code> block has no "name"`)
		}
		c.Name = v.Name
		return withArgs(c, v.Args, bad)
	}
	// TOOL(JSON) or TOOL
	name, rest, hasParen := strings.Cut(s, "(")
	name = strings.TrimSpace(name)
	if !nameRE().MatchString(name) {
		return bad(fmt.Sprintf("%q is not a tool name", cut(name, 60)))
	}
	c.Name = name
	if !hasParen {
		return withArgs(c, nil, bad)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasSuffix(rest, ")") {
		return bad("the call's parenthesis is not closed")
	}
	inner := strings.TrimSpace(strings.TrimSuffix(rest, ")"))
	if inner == "" || json.Valid([]byte(inner)) || strings.HasPrefix(inner, "{") || strings.HasPrefix(inner, "[") {
		return withArgs(c, json.RawMessage(inner), bad)
	}
	args, err := keywordArgs(inner)
	if err != nil {
		return bad(fmt.Sprintf("the arguments of %s could not be read (%v); write them as name=\"value\" pairs or a JSON object", c.Name, err))
	}
	return withArgs(c, args, bad)
}

// keywordArgs reads the extension plan's call form, the one the
// summary's signatures and the manifests' examples show the model:
// sayHello(name="Ada", times=2, loud=true). Values are strings in double
// or single quotes, numbers, true/false/null (Python's True/False/None
// too), or JSON objects and arrays.
func keywordArgs(s string) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	for s = strings.TrimSpace(s); s != ""; {
		eq := strings.IndexAny(s, "=:")
		if eq <= 0 {
			return nil, fmt.Errorf("%q is not name=value", cut(s, 40))
		}
		name := strings.TrimSpace(s[:eq])
		if !nameRE().MatchString(name) {
			return nil, fmt.Errorf("%q is not an argument name", cut(name, 40))
		}
		if _, dup := obj[name]; dup {
			return nil, fmt.Errorf("%s is given twice", name)
		}
		v, rest, err := argValue(strings.TrimSpace(s[eq+1:]))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		obj[name] = v
		rest = strings.TrimSpace(rest)
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("expected a comma before %q", cut(rest, 40))
		}
		s = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return json.Marshal(obj)
}

// argValue reads one value at the start of s and returns it as JSON with
// what follows it.
func argValue(s string) (json.RawMessage, string, error) {
	if s == "" {
		return nil, "", fmt.Errorf("no value")
	}
	switch q := s[0]; q {
	case '"', '\'':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch ch := s[i]; {
			case ch == q:
				v, _ := json.Marshal(b.String())
				return v, s[i+1:], nil
			case ch == '\\' && i+1 < len(s):
				i++
				switch e := s[i]; e {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(e)
				}
			default:
				b.WriteByte(ch)
			}
		}
		return nil, "", fmt.Errorf("a string is not closed")
	case '{', '[':
		dec := json.NewDecoder(strings.NewReader(s))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", fmt.Errorf("not JSON: %v", err)
		}
		return v, s[dec.InputOffset():], nil
	}
	end := strings.IndexByte(s, ',')
	if end < 0 {
		end = len(s)
	}
	word := strings.TrimSpace(s[:end])
	switch word {
	case "True":
		word = "true"
	case "False":
		word = "false"
	case "None":
		word = "null"
	}
	var x any
	if err := json.Unmarshal([]byte(word), &x); err != nil {
		return nil, "", fmt.Errorf("%q is not a value (quote strings)", cut(word, 40))
	}
	if _, isStr := x.(string); isStr {
		return nil, "", fmt.Errorf("%q is not a value (quote strings)", cut(word, 40))
	}
	return json.RawMessage(word), s[end:], nil
}

func withArgs(c textCall, args json.RawMessage, bad func(string) textCall) textCall {
	if len(args) == 0 || string(args) == "null" {
		c.Args = json.RawMessage("{}")
		return c
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return bad(fmt.Sprintf("the arguments of %s are not a JSON object", c.Name))
	}
	c.Args = args
	return c
}

// stripFence removes a Markdown code fence around s.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	t = strings.TrimPrefix(t, "```")
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	} else {
		return s
	}
	return strings.TrimSuffix(strings.TrimSpace(t), "```")
}

// formatTextResults is the user message answering a reply's blocks.
func formatTextResults(results []textResult) string {
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		status := "ok"
		if r.IsError {
			status = "error"
		}
		name := r.Name
		if name == "" {
			name = "invalid"
		}
		fmt.Fprintf(&b, "<tool_result name=%q status=%q>\n%s\n</tool_result>", name, status, r.Text)
	}
	return b.String()
}

type textResult struct {
	Name    string
	Text    string
	IsError bool
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
