package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/claudetest"
)

// scriptFor is the model's side of the conversation: a prompt naming a
// step asks for a tool; a Read's result is followed by an Edit; any other
// tool result ends the turn.
func scriptFor(ws string) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		last := r.LastUser()
		lastTool := ""
		for i := len(r.Messages) - 1; i >= 0 && lastTool == ""; i-- {
			if r.Messages[i].Role != "assistant" {
				continue
			}
			var blocks []struct{ Type, Name string }
			_ = json.Unmarshal(r.Messages[i].Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_use" {
					lastTool = b.Name
				}
			}
			break
		}
		afterAssistant := ""
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "user"; i-- {
			afterAssistant += string(r.Messages[i].Content)
		}
		if strings.Contains(afterAssistant, `"tool_result"`) {
			if lastTool == "Read" {
				return claudetest.Reply{Tool: "Edit", Input: map[string]any{
					"file_path": filepath.Join(ws, "edit.txt"), "old_string": "line two", "new_string": "line 2 from the model"}}
			}
			return claudetest.Reply{Text: "Done."}
		}
		switch {
		case strings.Contains(last, "STEP_WRITE"):
			return claudetest.Reply{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "new.txt"), "content": "from the model\n"}}
		case strings.Contains(last, "STEP_EDIT"):
			return claudetest.Reply{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(ws, "edit.txt")}}
		case strings.Contains(last, "STEP_REJECT"):
			return claudetest.Reply{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "keep.txt"), "content": "must not land\n"}}
		}
		return claudetest.Reply{Text: "Hello from the scripted model."}
	}
}
