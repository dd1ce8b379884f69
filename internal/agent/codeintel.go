package agent

import (
	"context"
	"encoding/json"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/model"
)

// codeIntelTools offers the code-intelligence tools (code_definition,
// code_references, …) as a ToolSource.
type codeIntelTools struct{ t *codeintel.Tools }

func (c codeIntelTools) Decls() []model.ToolDecl {
	ds := c.t.Decls()
	out := make([]model.ToolDecl, len(ds))
	for i, d := range ds {
		out[i] = model.ToolDecl{Name: d.Name, Description: d.Description, Schema: d.Schema}
	}
	return out
}

func (c codeIntelTools) Call(ctx context.Context, name string, args json.RawMessage) (string, bool, error) {
	text, isErr := c.t.Call(ctx, name, args)
	return text, isErr, nil
}

// afterEdit is what the language servers report new after an accepted
// edit was written ("" when nothing, or no code intelligence), for the
// edit's result: the model hears of the errors it made at once, as
// Claude Code's model does through its IDE.
func (a *Agent) afterEdit(ctx context.Context, abs string, p Proposal) string {
	if a.CodeIntel == nil {
		return ""
	}
	var old *string
	if !p.IsNew {
		old = &p.Old
	}
	return a.CodeIntel.AfterEdit(ctx, abs, old, a.OnCodeStart)
}
