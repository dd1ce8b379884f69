// Package config reads gemkit's config file: gemkit/config.json in the
// user's config folder, or the file --config names. The file is one JSON
// object: its top-level fields are the model's settings (internal/model)
// and its "codeIntel" object the code-intelligence settings
// (internal/langserver). This package finds the file, reads it once, with
// a bound on its size, and hands each owner its section; each owner
// decodes and checks its own section with Decode, so that every error
// names the file and the field or line at fault.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// MaxSize bounds the file: a config file is a few hundred bytes, and a
// larger one is a mistake (a log or a binary named by --config).
const MaxSize = 1 << 20

// File is the config file, read once and split into its sections.
type File struct {
	// Path is where the file was looked for.
	Path string
	// Model is the top-level object without "codeIntel": the model's
	// settings. Nil when the file is missing.
	Model json.RawMessage
	// CodeIntel is the "codeIntel" object as written; nil when the file
	// or the object is missing.
	CodeIntel json.RawMessage
}

// Path is the config file's path: flag (the --config value) when it is
// set, else gemkit/config.json in the user's config folder
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux,
// ~/Library/Application Support on macOS, %AppData% on Windows).
func Path(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	d, err := gemkitdir.UserConfig()
	if err != nil {
		return "", fmt.Errorf("find the config file (pass --config): %w", err)
	}
	return filepath.Join(d, "config.json"), nil
}

// Read reads the config file at path and splits it into its sections. A
// missing file is an empty File: every setting has a default. A file that
// is not one JSON object, or is larger than MaxSize, is an error naming
// the file and, for bad JSON, the line and column; so is anything but a
// regular file (a FIFO is refused, not waited on).
func Read(path string) (*File, error) {
	f := &File{Path: path}
	fh, err := fsutil.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fileError(path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxSize+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if int64(len(data)) > MaxSize {
		return nil, fmt.Errorf("%s: larger than %d bytes: is it gemkit's config file?", path, MaxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty: write {} or remove the file", path)
	}
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("%s: %s", path, describe(err, data, ""))
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return nil, fmt.Errorf("%s:%d:%d: more after the config object", path, line, col)
	}
	if top == nil { // the file is null: nothing set
		return f, nil
	}
	if raw, ok := top["codeIntel"]; ok {
		f.CodeIntel = raw
		delete(top, "codeIntel")
	}
	if f.Model, err = json.Marshal(top); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// fileError is err, from opening or reading the file at path, worded as
// every other error of the file is: the path first.
func fileError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Decode decodes one section of the file at from into v. Unknown fields
// are errors, so that a typo is not silently ignored; section names the
// section in messages ("" for the top level). An empty or null section
// leaves v as it is.
func Decode(raw json.RawMessage, from, section string, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if section != "" {
			return fmt.Errorf("%s: %s: %s", from, section, describe(err, raw, section))
		}
		return fmt.Errorf("%s: %s", from, describe(err, raw, section))
	}
	return nil
}

// describe says what is wrong with data in a person's words: the line
// and column of a syntax error, the field of a value of the wrong type,
// the name of an unknown field.
func describe(err error, data []byte, section string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Sprintf("line %d, column %d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the JSON ends early: a brace or quote is missing"
	case errors.As(err, &typ) && typ.Field == "":
		if section == "" {
			return fmt.Sprintf("want a JSON object, got %s", value(typ.Value))
		}
		return fmt.Sprintf("want an object, got %s", value(typ.Value))
	case errors.As(err, &typ):
		return fmt.Sprintf("%s: want %s, got %s", typ.Field, kind(typ.Type.Kind().String()), value(typ.Value))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// kind names a Go kind as a JSON value.
func kind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "a number"
	case k == "string":
		return "a string"
	case k == "bool":
		return "true or false"
	case k == "slice", k == "array":
		return "a list"
	case k == "map", k == "struct":
		return "an object"
	}
	return "another type"
}

// value names a JSON value as encoding/json's UnmarshalTypeError gives
// it ("array", "number 3").
func value(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"), v == "string":
		return "a " + v
	}
	return v
}

// position is the 1-based line and column of offset in data.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return line, col
}
