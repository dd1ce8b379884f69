package cli

import (
	"fmt"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
)

// modelTools says, per tool of in, how a model sees it here: its exposed
// name and signature, as `gemkit extensions summary` and `gemkit mcp`
// show them, or why it is hidden; and per agent skill (keyed
// disclosure.SkillPrefix + its name) how a model reads it. Empty when the
// extension is not offered to models in this workspace (disabled or
// invalid).
func modelTools(st *extension.Store, in *extension.Installed) map[string]string {
	m := in.Manifest()
	if m == nil {
		return nil
	}
	set, _ := disclosure.Load(st)
	if set == nil || set.Extension(m.Name) == nil {
		return nil
	}
	out := map[string]string{}
	for i := range m.Tools {
		t := &m.Tools[i]
		if mt := set.ToolFor(m.Name, t.Name); mt != nil {
			out[t.Name] = disclosure.Signature(mt.Name, t)
		} else {
			out[t.Name] = "none: hidden from models by an excludeTools entry"
		}
	}
	for _, sk := range set.Extension(m.Name).Skills {
		out[disclosure.SkillPrefix+sk.Name] = fmt.Sprintf("%s(extension: %q, name: %q)", disclosure.ReadDocTool, m.Name, disclosure.SkillPrefix+disclosure.SkillName(sk))
	}
	return out
}
