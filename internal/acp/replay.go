package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/acp/store"
	"github.com/gemkit/gemkit/internal/model"
)

// replay sends the session's conversation to the client as
// session/update notifications, as session/load asks before its answer,
// in the shapes a prompt sends them: the person's messages
// (user_message_chunk), the model's words (agent_message_chunk), each
// tool call (tool_call) and its outcome (tool_call_update: completed or
// failed, with the result the model read, an edit's acceptance or
// rejection among them). A conversation whose earliest messages the
// store left out says so first.
func (s *session) replay() {
	s.turn.Lock()
	defer s.turn.Unlock()
	s.mu.Lock()
	dropped := s.meta.Dropped
	s.mu.Unlock()
	if dropped > 0 {
		s.update(sdk.UpdateAgentMessageText(fmt.Sprintf("[gemkit: the %d earliest messages of this conversation are not shown: a stored conversation keeps its latest %d MiB]\n", dropped, store.MaxFile>>20)))
	}
	n := 0
	var pending []sdk.ToolCallId
	for _, m := range s.agent.History() {
		switch m.Role {
		case model.User:
			if m.Text != "" {
				s.update(sdk.UpdateUserMessageText(m.Text))
			}
		case model.Assistant:
			if m.Text != "" {
				s.update(sdk.UpdateAgentMessageText(m.Text))
			}
			pending = pending[:0]
			for _, c := range m.Calls {
				n++
				id := sdk.ToolCallId(fmt.Sprintf("call_%d", n))
				title, kind, locs := s.describe(c.Name, c.Args)
				s.update(sdk.StartToolCall(id, title, sdk.WithStartKind(kind), sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
					sdk.WithStartLocations(locs), sdk.WithStartRawInput(json.RawMessage(rawOrEmpty(c.Args)))))
				pending = append(pending, id)
			}
		case model.Tool:
			for i, r := range m.Results {
				if i < len(pending) {
					s.update(resultUpdate(pending[i], r.Text, r.IsError))
				}
			}
			pending = pending[:0]
		}
	}
}

// resultUpdate is the tool_call_update that ends the tool call id with
// the result text, shown up to maxShown bytes.
func resultUpdate(id sdk.ToolCallId, text string, isError bool) sdk.SessionUpdate {
	status := sdk.ToolCallStatusCompleted
	if isError {
		status = sdk.ToolCallStatusFailed
	}
	if len(text) > maxShown {
		text = strings.ToValidUTF8(text[:maxShown], "") + "\n[…]"
	}
	return sdk.UpdateToolCall(id, sdk.WithUpdateStatus(status),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}))
}
