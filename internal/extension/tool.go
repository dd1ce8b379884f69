package extension

import (
	"encoding/json"
	"fmt"
)

// Runtime names the interpreter of a tool's executable.
type Runtime string

// The runtimes a tool may declare.
const (
	RuntimeNode   Runtime = "node"
	RuntimePython Runtime = "python"
	RuntimeShell  Runtime = "shell"
)

// Output says how a tool's stdout is read.
type Output string

// The output kinds a tool may declare; an empty Output means OutputString.
const (
	OutputJSON   Output = "json"
	OutputString Output = "string"
)

// ArgType is the type of one tool argument.
type ArgType string

// The argument types a tool may declare.
const (
	ArgString      ArgType = "string"
	ArgNumber      ArgType = "number"
	ArgInteger     ArgType = "integer"
	ArgBoolean     ArgType = "boolean"
	ArgStringArray ArgType = "array"
)

// MaxDescription is the most characters a tool's description (and an
// argument's) may have. The model gets every tool's description with
// every request, whole (the MCP listing, gemkit's agent): an unbounded
// one costs each request its length. The longest of the real MCP
// servers gemkit's tests run are well below it: 3,629 characters
// (Postman's searchPostmanElements), 2,006 (Context7's
// resolve-library-id), 457 (the reference filesystem server's
// read_text_file); gemkit's templates' run to 88.
const MaxDescription = 8192

// Tool is an executable script the extension exposes as a tool.
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Executable  string  `json:"executable"`
	Runtime     Runtime `json:"runtime"`
	Output      Output  `json:"output,omitempty"`
	// OutputSchema is the JSON Schema (an object schema) of a JSON tool's
	// output, for clients that check structured results (MCP's
	// outputSchema); absent means any object.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Args         []Arg           `json:"args,omitempty"`
}

// Arg is one named argument of a tool, passed as --name value.
type Arg struct {
	Name        string  `json:"name"`
	Type        ArgType `json:"type"`
	Description string  `json:"description,omitempty"`
	// Required, when set, says whether a call must give the argument;
	// unset, see Arg.Optional.
	Required *bool `json:"required,omitempty"`
	// Default is the value a call that leaves the argument out gets (the
	// tool then sees --name default); it makes the argument optional.
	Default json.RawMessage `json:"default,omitempty"`
}

// Optional reports whether a call may leave the argument out: when
// "required" is false, when it has a default, and for booleans (absent is
// false) and arrays (absent is empty) unless "required" is true.
func (a Arg) Optional() bool {
	if a.Required != nil {
		return !*a.Required
	}
	return len(a.Default) > 0 || a.Type == ArgBoolean || a.Type == ArgStringArray
}

// DefaultValue decodes the argument's default, if it has one, as JSON
// values decode (a number is a float64, an array a []any), and checks
// that it fits the argument's type.
func (a Arg) DefaultValue() (v any, ok bool, err error) {
	if len(a.Default) == 0 || isNull(a.Default) {
		return nil, false, nil
	}
	if err := json.Unmarshal(a.Default, &v); err != nil {
		return nil, false, err
	}
	fits := false
	switch a.Type {
	case ArgString:
		_, fits = v.(string)
	case ArgNumber:
		_, fits = v.(float64)
	case ArgInteger:
		f, isNum := v.(float64)
		fits = isNum && f == float64(int64(f))
	case ArgBoolean:
		_, fits = v.(bool)
	case ArgStringArray:
		list, isList := v.([]any)
		fits = isList
		for _, e := range list {
			if _, s := e.(string); !s {
				fits = false
			}
		}
	}
	if !fits {
		return nil, false, fmt.Errorf("%s does not fit type %q", a.Default, a.Type)
	}
	return v, true, nil
}
