package extview

import (
	"fmt"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
)

// Description is `describe --json`: the Item, the person's consent,
// the manifest and install metadata as read, how each permission is
// enforced here, and the policies.
type Description struct {
	Item
	Consent     Consent                     `json:"consent"`
	Manifest    *extension.Manifest         `json:"manifest,omitempty"`
	Metadata    *extension.InstallMetadata  `json:"installMetadata,omitempty"`
	Enforcement []extension.EnforcementNote `json:"enforcement"`
	// Policies are its policies/*.toml, as Gemini CLI loads them.
	Policies *Policies `json:"policies,omitempty"`
}

// Policies is describe --json's account of the policies.
type Policies struct {
	Files    []string `json:"files"`
	Rules    []string `json:"rules"`
	Checkers []string `json:"checkers"`
	Notes    []string `json:"notes,omitempty"`
}

// PoliciesOf is p as Description says it; nil when it has none.
func PoliciesOf(p extension.Policies) *Policies {
	if p.Empty() {
		return nil
	}
	j := &Policies{Files: p.Files, Rules: []string{}, Checkers: []string{}}
	for _, r := range p.Rules {
		j.Rules = append(j.Rules, r.Words())
	}
	for _, c := range p.Checkers {
		j.Checkers = append(j.Checkers, c.Words())
	}
	j.Notes = p.Notes()
	return j
}

// ModelTools says, per tool of in, how a model sees it here: its exposed
// name and signature, as `gemkit extensions summary` and `gemkit mcp`
// show them, or why it is hidden; and per agent skill (keyed
// disclosure.SkillPrefix + its name) how a model reads it. Empty when the
// extension is not offered to models in this workspace (disabled or
// invalid).
func ModelTools(st *extension.Store, in *extension.Installed) map[string]string {
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
