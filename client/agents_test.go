package client

import (
	"testing"

	"github.com/gemkit/gemkit/ide"
)

// TestAgentsAreTableIDs: the CLIs a client can stand in for are named by
// their IDs in ide.Agents, the one table of the agents.
func TestAgentsAreTableIDs(t *testing.T) {
	if AgentGemini != ide.AgentGemini.ID || AgentQwen != ide.AgentQwen.ID {
		t.Errorf("client agents %q, %q; table IDs %q, %q", AgentGemini, AgentQwen, ide.AgentGemini.ID, ide.AgentQwen.ID)
	}
}
