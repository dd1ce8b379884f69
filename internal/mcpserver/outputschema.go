package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// misfit says how structured, the structuredContent of a call, does not
// fit schema, the outputSchema the tool's manifest declares, or "" when
// it fits. A client checks the one against the other and refuses the
// whole result when they disagree (the TypeScript SDK's callTool answers
// "Structured content does not match the tool's output schema"), which a
// model cannot tell from a broken server; so the server checks first and
// says whose the fault is. A schema that does not compile is not checked
// here: the clients cannot check against it either. The schema's $refs
// load nothing: an extension's manifest does not get to read files or
// URLs through gemkit.
func misfit(schema, structured json.RawMessage) string {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return ""
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	const loc = "mem:///outputSchema.json"
	if c.AddResource(loc, doc) != nil {
		return ""
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return ""
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		return err.Error()
	}
	err = sch.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return ""
	}
	// The first line names the schema's location; the rest say where
	// and how the output differs, one line each.
	_, rest, _ := strings.Cut(ve.Error(), "\n")
	var why []string
	for _, l := range strings.Split(rest, "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- ")); l != "" {
			why = append(why, l)
		}
	}
	return strings.Join(why, "; ")
}
