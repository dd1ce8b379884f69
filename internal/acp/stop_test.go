package acp

import (
	"errors"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/model"
)

// TestStopReason maps each way a Run ends to ACP's stop reasons; a
// failure of the model's API other than a refusal is an error answer
// with its words in the message, where clients print them.
func TestStopReason(t *testing.T) {
	for _, c := range []struct {
		out    agent.Outcome
		reason sdk.StopReason
		err    string
	}{
		{agent.Outcome{Status: agent.Done}, sdk.StopReasonEndTurn, ""},
		{agent.Outcome{Status: agent.MaxTokens}, sdk.StopReasonMaxTokens, ""},
		{agent.Outcome{Status: agent.MaxTurns}, sdk.StopReasonMaxTurnRequests, ""},
		{agent.Outcome{Status: agent.Cancelled}, sdk.StopReasonCancelled, ""},
		{agent.Outcome{Status: agent.Failed, Err: &model.Error{Kind: model.KindSafety}}, sdk.StopReasonRefusal, ""},
		{agent.Outcome{Status: agent.Failed, Err: errors.New("quota exhausted")}, "", "quota exhausted"},
	} {
		reason, err := stopReason(c.out)
		var re *sdk.RequestError
		switch {
		case c.err == "" && (err != nil || reason != c.reason):
			t.Errorf("%s: %q %v, want %q", c.out.Status, reason, err, c.reason)
		case c.err != "" && (!errors.As(err, &re) || re.Code != -32603 || !contains(re.Data, c.err) || re.Message != "Internal error: "+c.err):
			t.Errorf("%s: %v, want an internal error saying %q", c.out.Status, err, c.err)
		}
	}
}

func contains(data any, s string) bool {
	m, ok := data.(map[string]any)
	return ok && m["error"] == s
}
