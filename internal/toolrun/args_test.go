package toolrun

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

var argTool = &extension.Tool{Name: "t", Args: []extension.Arg{
	{Name: "file", Type: extension.ArgString},
	{Name: "count", Type: extension.ArgInteger},
	{Name: "ratio", Type: extension.ArgNumber},
	{Name: "verbose", Type: extension.ArgBoolean},
	{Name: "tag", Type: extension.ArgStringArray},
}}

func TestFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    map[string]any
		want    []string
		wantErr string
	}{
		{"all types from JSON", map[string]any{"file": "a b.py", "count": 3.0, "ratio": 0.5, "verbose": true, "tag": []any{"x", "y"}},
			[]string{"--file", "a b.py", "--count", "3", "--ratio", "0.5", "--verbose", "--tag", "x", "--tag", "y"}, ""},
		{"false boolean and no array are omitted", map[string]any{"file": "f", "count": 1, "ratio": "2", "verbose": false},
			[]string{"--file", "f", "--count", "1", "--ratio", "2"}, ""},
		{"value that looks like a flag stays a value", map[string]any{"file": "--rm", "count": -2, "ratio": -1.5},
			[]string{"--file=--rm", "--count=-2", "--ratio=-1.5"}, ""},
		{"shell characters are just bytes", map[string]any{"file": "$(rm -rf ~); `x` | y", "count": 0, "ratio": 0},
			[]string{"--file", "$(rm -rf ~); `x` | y", "--count", "0", "--ratio", "0"}, ""},
		{"newlines are just bytes", map[string]any{"file": "a\n--evil\nb", "count": 0, "ratio": 0},
			[]string{"--file", "a\n--evil\nb", "--count", "0", "--ratio", "0"}, ""},
		{"NUL refused", map[string]any{"file": "a\x00--evil", "count": 0, "ratio": 0}, nil, "--file contains a NUL byte"},
		{"NUL in an array refused", map[string]any{"file": "a", "count": 0, "ratio": 0, "tag": []any{"x\x00"}}, nil, "--tag contains a NUL byte"},
		{"missing", map[string]any{"file": "f"}, nil, "missing argument --count, --ratio"},
		{"unknown", map[string]any{"file": "f", "count": 1, "ratio": 1, "evil": "x"}, nil, "unknown argument --evil; it takes --file (string)"},
		{"string wanted", map[string]any{"file": 3, "count": 1, "ratio": 1}, nil, "--file must be a string, got 3"},
		{"integer wanted", map[string]any{"file": "f", "count": 1.5, "ratio": 1}, nil, "--count must be a whole number"},
		{"number wanted", map[string]any{"file": "f", "count": 1, "ratio": "abc"}, nil, "--ratio must be a number"},
		{"boolean wanted", map[string]any{"file": "f", "count": 1, "ratio": 1, "verbose": "maybe"}, nil, "--verbose must be true or false"},
		{"array of strings wanted", map[string]any{"file": "f", "count": 1, "ratio": 1, "tag": []any{1}}, nil, "--tag must be a list of strings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Flags(argTool, c.args)
			if c.wantErr != "" {
				var ae *ArgError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestParseCLIArgs(t *testing.T) {
	cases := []struct {
		argv    []string
		want    map[string]any
		wantErr string
	}{
		{[]string{"--file", "a", "--count=2", "--verbose", "--tag", "x", "--tag=y", "--ratio", "-1"},
			map[string]any{"file": "a", "count": "2", "verbose": true, "tag": []string{"x", "y"}, "ratio": "-1"}, ""},
		{[]string{"--verbose", "false", "--file", "a"}, map[string]any{"verbose": "false", "file": "a"}, ""},
		{[]string{"--nope", "1"}, nil, "unknown argument --nope"},
		{[]string{"file", "a"}, nil, `expected --name value, got "file"`},
		{[]string{"--file"}, nil, "--file needs a value"},
		{[]string{"--file", "a", "--file", "b"}, nil, "--file is given twice"},
	}
	for _, c := range cases {
		got, err := ParseCLIArgs(argTool, c.argv)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err %v, want %q", c.argv, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, %v; want %v", c.argv, got, err, c.want)
		}
	}
	// What the command line gives, Flags accepts.
	got, _ := ParseCLIArgs(argTool, []string{"--file", "a", "--count", "2", "--ratio", "1e3"})
	flags, err := Flags(argTool, got)
	if err != nil || !reflect.DeepEqual(flags, []string{"--file", "a", "--count", "2", "--ratio", "1000"}) {
		t.Fatalf("flags %q, %v", flags, err)
	}
}

// TestFlagsOptionalAndDefault: an argument the manifest makes optional
// may be left out; one with a default gets it; "required": true makes a
// boolean required.
func TestFlagsOptionalAndDefault(t *testing.T) {
	no, yes := false, true
	tool := &extension.Tool{Name: "slugify", Args: []extension.Arg{
		{Name: "text", Type: extension.ArgString},
		{Name: "maxLength", Type: extension.ArgInteger, Default: []byte("40")},
		{Name: "sep", Type: extension.ArgString, Required: &no},
		{Name: "lower", Type: extension.ArgBoolean, Required: &yes},
	}}
	cases := []struct {
		name    string
		args    map[string]any
		want    []string
		wantErr string
	}{
		{"defaults and optional left out", map[string]any{"text": "A b", "lower": false}, []string{"--text", "A b", "--maxLength", "40"}, ""},
		{"given values win", map[string]any{"text": "A", "maxLength": 3, "sep": "_", "lower": true},
			[]string{"--text", "A", "--maxLength", "3", "--sep", "_", "--lower"}, ""},
		{"required boolean missing", map[string]any{"text": "A"}, nil, "missing argument --lower"},
		{"required string missing", map[string]any{"lower": true}, nil, "missing argument --text; it takes --text (string), --maxLength (integer, optional, default 40), --sep (string, optional), --lower (boolean)"},
	}
	for _, c := range cases {
		got, err := Flags(tool, c.args)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
