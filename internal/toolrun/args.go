package toolrun

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// ArgError is a call whose arguments do not match the tool's declared
// args. Its message says what to change.
type ArgError struct {
	Tool string
	Msg  string
}

func (e *ArgError) Error() string { return fmt.Sprintf("tool %s: %s", e.Tool, e.Msg) }

// argNames lists a tool's argument names with their types, for messages.
func argNames(t *extension.Tool) string {
	if len(t.Args) == 0 {
		return "it takes no arguments"
	}
	parts := make([]string, len(t.Args))
	for i, a := range t.Args {
		parts[i] = "--" + a.Name + " (" + string(a.Type)
		if a.Optional() {
			parts[i] += ", optional"
		}
		if len(a.Default) > 0 {
			parts[i] += ", default " + string(a.Default)
		}
		parts[i] += ")"
	}
	return "it takes " + strings.Join(parts, ", ")
}

// Flags checks args against the tool's declared arguments and turns them
// into command-line flags, in the declared order: "--name value" for
// strings and numbers (or "--name=value" when the value starts with "-",
// so it cannot be read as another flag), "--name" alone for a true boolean
// and nothing for a false one, and one "--name value" per element of an
// array. Every declared argument is required except booleans (absent is
// false) and arrays (absent is empty); unknown arguments are refused.
// An argument the manifest makes optional ("required": false) may be left
// out, and one with a default gets it when left out.
//
// Values come from JSON (MCP, the model) or from ParseCLIArgs: numbers may
// be float64, json.Number, int or a numeric string.
func Flags(t *extension.Tool, args map[string]any) ([]string, error) {
	declared := map[string]extension.Arg{}
	for _, a := range t.Args {
		declared[a.Name] = a
	}
	var unknown []string
	for name := range args {
		if _, ok := declared[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &ArgError{t.Name, fmt.Sprintf("unknown argument %s; %s", quoteAll(unknown), argNames(t))}
	}
	var out []string
	var missing []string
	for _, a := range t.Args {
		v, ok := args[a.Name]
		if !ok || v == nil {
			def, has, err := a.DefaultValue()
			switch {
			case err != nil:
				return nil, &ArgError{t.Name, fmt.Sprintf("the default of --%s is broken: %v", a.Name, err)}
			case has:
				v = def
			case a.Optional():
				continue
			default:
				missing = append(missing, a.Name)
				continue
			}
		}
		flags, err := argFlags(t, a, v)
		if err != nil {
			return nil, err
		}
		out = append(out, flags...)
	}
	if len(missing) > 0 {
		return nil, &ArgError{t.Name, fmt.Sprintf("missing argument %s; %s", quoteAll(missing), argNames(t))}
	}
	return out, nil
}

// argFlags turns the value v of the argument a into its flags, checking
// it fits the argument's type.
func argFlags(t *extension.Tool, a extension.Arg, v any) ([]string, error) {
	flag := "--" + a.Name
	var out []string
	switch a.Type {
	case extension.ArgString:
		s, ok := v.(string)
		if !ok {
			return nil, typeErr(t, a, v)
		}
		if err := checkValue(t, a, s); err != nil {
			return nil, err
		}
		out = appendFlag(out, flag, s)
	case extension.ArgNumber, extension.ArgInteger:
		f, err := toNumber(v)
		if err != nil {
			return nil, typeErr(t, a, v)
		}
		if a.Type == extension.ArgNumber {
			return appendFlag(out, flag, strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, &ArgError{t.Name, fmt.Sprintf("--%s must be a whole number, got %v", a.Name, v)}
		}
		out = appendFlag(out, flag, strconv.FormatInt(int64(f), 10))
	case extension.ArgBoolean:
		b, err := toBool(v)
		if err != nil {
			return nil, typeErr(t, a, v)
		}
		if b {
			out = append(out, flag)
		}
	case extension.ArgStringArray:
		list, err := toStrings(v)
		if err != nil {
			return nil, typeErr(t, a, v)
		}
		for _, s := range list {
			if err := checkValue(t, a, s); err != nil {
				return nil, err
			}
			out = appendFlag(out, flag, s)
		}
	default:
		return nil, &ArgError{t.Name, fmt.Sprintf("argument %s has the unknown type %q", a.Name, a.Type)}
	}
	return out, nil
}

// checkValue refuses what no argument vector can carry: a NUL byte ends
// a C string, so the tool would see a different value than was checked.
func checkValue(t *extension.Tool, a extension.Arg, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return &ArgError{t.Name, fmt.Sprintf("--%s contains a NUL byte, which cannot be passed to a program", a.Name)}
	}
	return nil
}

func appendFlag(out []string, flag, v string) []string {
	if strings.HasPrefix(v, "-") {
		return append(out, flag+"="+v)
	}
	return append(out, flag, v)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "--" + n
	}
	return strings.Join(q, ", ")
}

func typeErr(t *extension.Tool, a extension.Arg, v any) error {
	want := map[extension.ArgType]string{
		extension.ArgString: "a string", extension.ArgNumber: "a number", extension.ArgInteger: "a whole number",
		extension.ArgBoolean: "true or false", extension.ArgStringArray: "a list of strings",
	}[a.Type]
	got, _ := json.Marshal(v)
	return &ArgError{t.Name, fmt.Sprintf("--%s must be %s, got %s", a.Name, want, got)}
}

func toNumber(v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("not finite")
		}
		return n, nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case json.Number:
		return toNumber(string(n))
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil {
			return 0, err
		}
		return toNumber(f)
	}
	return 0, fmt.Errorf("not a number")
}

func toBool(v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		return strconv.ParseBool(b)
	}
	return false, fmt.Errorf("not a boolean")
}

func toStrings(v any) ([]string, error) {
	switch l := v.(type) {
	case []string:
		return l, nil
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d is not a string", i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("not a list")
}

// ParseCLIArgs reads a tool's arguments as typed on gemkit's command line:
// "--name value" or "--name=value", a boolean as "--name" alone (or
// "--name=false"), and an array argument by repeating its flag.
func ParseCLIArgs(t *extension.Tool, argv []string) (map[string]any, error) {
	declared := map[string]extension.Arg{}
	for _, a := range t.Args {
		declared[a.Name] = a
	}
	out := map[string]any{}
	for i := 0; i < len(argv); i++ {
		tok := argv[i]
		name, ok := strings.CutPrefix(tok, "--")
		if !ok || name == "" {
			return nil, &ArgError{t.Name, fmt.Sprintf("expected --name value, got %q; %s", tok, argNames(t))}
		}
		name, val, hasVal := strings.Cut(name, "=")
		a, known := declared[name]
		if !known {
			return nil, &ArgError{t.Name, fmt.Sprintf("unknown argument --%s; %s", name, argNames(t))}
		}
		if !hasVal {
			if a.Type == extension.ArgBoolean && (i+1 >= len(argv) || !isBoolWord(argv[i+1])) {
				out[name] = true
				continue
			}
			if i+1 >= len(argv) {
				return nil, &ArgError{t.Name, fmt.Sprintf("--%s needs a value", name)}
			}
			i++
			val = argv[i]
		}
		switch a.Type {
		case extension.ArgStringArray:
			prev, _ := out[name].([]string)
			out[name] = append(prev, val)
		default:
			if _, dup := out[name]; dup {
				return nil, &ArgError{t.Name, fmt.Sprintf("--%s is given twice", name)}
			}
			out[name] = val
		}
	}
	return out, nil
}

func isBoolWord(s string) bool {
	_, err := strconv.ParseBool(s)
	return err == nil
}
