package mcpserver

import (
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// misfit says how structured, the structuredContent of a call, does not
// fit schema, the outputSchema the tool's manifest declares, or "" when
// it fits. A client checks the one against the other and refuses the
// whole result when they disagree (the TypeScript SDK's callTool answers
// "Structured content does not match the tool's output schema"), which a
// model cannot tell from a broken server; so the server checks first and
// says whose the fault is. A schema that does not resolve is not checked
// here: the clients cannot check against it either. The schema's $refs
// load nothing: Resolve is given no loader, so an extension's manifest
// does not get to read files or URLs through gemkit.
func misfit(schema, structured json.RawMessage) string {
	var s jsonschema.Schema
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(structured, &v); err != nil {
		return err.Error()
	}
	if err := r.Validate(v); err != nil {
		return where(err.Error())
	}
	return ""
}

// where rewrites jsonschema-go's error, which names every schema it went
// through ("validating root: validating /properties/n: type: …"), to the
// innermost one and what is wrong there: "at /properties/n: type: …", or
// "at the top: …" for the schema itself.
func where(msg string) string {
	at := "the top"
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		path, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if path != "root" {
			at = path
		}
		msg = after
	}
	return "at " + at + ": " + msg
}
