package extension

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
)

// Variables are the values Gemini CLI substitutes for ${name} in an
// extension's gemini-extension.json (and in its hooks/hooks.json, skills and
// agents, which gemkit does not read). Gemini CLI replaces them in every
// string value of the manifest — never in object keys — right after
// parsing and before anything else reads it; a ${name} it does not know is
// left as written. Context files (GEMINI.md) are not substituted.
type Variables struct {
	// ExtensionPath is ${extensionPath}: the extension's folder. For a
	// linked extension it is the linked source folder, not the entry in
	// ~/.gemini/extensions.
	ExtensionPath string
	// WorkspacePath is ${workspacePath}: the absolute path of the
	// workspace (the current directory of the session).
	WorkspacePath string
}

// lookup returns the value of one variable name and whether it is known.
// ${/} and ${pathSeparator} are both the path separator.
func (v Variables) lookup(name string) (string, bool) {
	switch name {
	case "extensionPath":
		return v.ExtensionPath, v.ExtensionPath != ""
	case "workspacePath":
		return v.WorkspacePath, v.WorkspacePath != ""
	case "/", "pathSeparator":
		return string(os.PathSeparator), true
	}
	return "", false
}

// Expand substitutes the known ${name} variables in s, leaving unknown ones
// (and ones with no value) as written, as Gemini CLI does.
func (v Variables) Expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		start := strings.Index(s, "${")
		if start < 0 {
			break
		}
		end := strings.IndexByte(s[start+2:], '}')
		if end < 0 {
			break
		}
		name := s[start+2 : start+2+end]
		b.WriteString(s[:start])
		if val, ok := v.lookup(name); ok {
			b.WriteString(val)
		} else {
			b.WriteString(s[start : start+3+end])
		}
		s = s[start+3+end:]
	}
	b.WriteString(s)
	return b.String()
}

// ExpandJSON substitutes the variables in every string value of a JSON
// document, leaving object keys, numbers and formatting of numbers intact.
func (v Variables) ExpandJSON(data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte("${")) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	doc = v.expandValue(doc)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func (v Variables) expandValue(x any) any {
	switch t := x.(type) {
	case string:
		return v.Expand(t)
	case []any:
		for i := range t {
			t[i] = v.expandValue(t[i])
		}
		return t
	case map[string]any:
		for k := range t {
			t[k] = v.expandValue(t[k])
		}
		return t
	}
	return x
}
