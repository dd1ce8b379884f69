package extension

// How a manifest's values of the wrong type become Problems in JSON's
// words, and how its syntax errors are told.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
)

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// decodeField unmarshals raw into v, turning a failure into a Problem at
// path. It reports whether decoding succeeded.
func decodeField(raw json.RawMessage, v any, path, want string, probs *[]Problem) bool {
	err := agentread.Unmarshal(raw, v, true)
	if err == nil {
		return true
	}
	*probs = append(*probs, typeProblem(err, path, want))
	return false
}

// typeProblem turns a decoding error of the value at path into a Problem
// in JSON's words (never Go's); want says what the value should be.
func typeProblem(err error, path, want string) Problem {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			// A field inside the value: say what that field should be.
			path, want = joinPath(path, te.Field), jsonKind(te.Type)
		}
		return Problem{Path: path, Message: fmt.Sprintf("is a JSON %s, not %s", jsonValueWord(te.Value), want), Fix: "make " + path + " " + want}
	}
	return Problem{Path: path, Message: "cannot be read: " + err.Error(), Fix: "make " + path + " " + want}
}

// jsonKind names the JSON value a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}

// jsonValueWord turns encoding/json's description of a value ("bool",
// "array", "number -1") into the word a manifest author knows.
func jsonValueWord(v string) string {
	switch {
	case v == "bool":
		return "boolean"
	case v == "array":
		return "list"
	case strings.HasPrefix(v, "number"):
		return "number"
	}
	return v
}

func joinPath(path, field string) string {
	if field == "" {
		return path
	}
	if path == "" {
		return field
	}
	return path + "." + field
}

// decodeList reads a JSON list element by element, so that a bad element
// is reported with its index and the good ones are kept.
func decodeList[T any](raw json.RawMessage, path string, probs *[]Problem) []T {
	var items []json.RawMessage
	if err := agentread.Unmarshal(raw, &items, true); err != nil {
		*probs = append(*probs, Problem{Path: path, Message: "is not a list", Fix: "make " + path + " a JSON list ([...])"})
		return nil
	}
	out := make([]T, 0, len(items))
	for i, item := range items {
		var v T
		p := fmt.Sprintf("%s[%d]", path, i)
		if decodeField(item, &v, p, "an object", probs) {
			out = append(out, v)
		} else {
			out = append(out, v) // keep indexes aligned with the file
		}
	}
	return out
}

// decodeTools reads the tools list, reading each tool's args one by one
// so that a bad argument is reported with both indexes.
func decodeTools(raw json.RawMessage, probs *[]Problem) []Tool {
	type toolWire struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		Executable   string          `json:"executable"`
		Runtime      Runtime         `json:"runtime"`
		Output       Output          `json:"output,omitempty"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Args         json.RawMessage `json:"args,omitempty"`
	}
	wires := decodeList[toolWire](raw, "tools", probs)
	tools := make([]Tool, len(wires))
	for i, w := range wires {
		tools[i] = Tool{Name: w.Name, Description: w.Description, Executable: w.Executable, Runtime: w.Runtime, Output: w.Output}
		if len(w.OutputSchema) > 0 && !isNull(w.OutputSchema) {
			tools[i].OutputSchema = w.OutputSchema
		}
		if len(w.Args) > 0 && !isNull(w.Args) {
			tools[i].Args = decodeList[Arg](w.Args, fmt.Sprintf("tools[%d].args", i), probs)
		}
	}
	return tools
}

// describeSyntaxError turns a JSON syntax error into one that names the
// line and column, which is what a person editing the file needs.
func describeSyntaxError(data []byte, err error) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New(`is empty; write a JSON object such as {"name": "my-extension", "version": "1.0.0"}`)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, b := range data[:min(int(se.Offset), len(data))] {
			if b == '\n' {
				line++
				col = 1
			} else {
				col++
			}
		}
		return fmt.Errorf("not valid JSON at line %d, column %d: %v", line, col, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("the manifest is a JSON %s; it must be a JSON object ({...})", te.Value)
	}
	return fmt.Errorf("not valid JSON: %w", err)
}
