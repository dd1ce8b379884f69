package acp

import sdk "github.com/coder/acp-go-sdk"

// capabilities are what gemkit declares in its answer to initialize:
// embedded context in prompts, MCP servers over HTTP, session/close,
// logout when it can forget a stored key,
// and, with sessions stored, session/load, session/list, session/resume
// (and session/delete, which the wire adds: see inbound).
func (s *server) capabilities() sdk.AgentCapabilities {
	c := sdk.AgentCapabilities{
		PromptCapabilities:  sdk.PromptCapabilities{EmbeddedContext: true},
		McpCapabilities:     sdk.McpCapabilities{Http: true},
		SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{}},
	}
	if s.cfg.Logout != nil {
		c.Auth.Logout = &sdk.LogoutCapabilities{}
	}
	if s.cfg.Sessions != nil {
		c.LoadSession = true
		c.SessionCapabilities.List = &sdk.SessionListCapabilities{}
		c.SessionCapabilities.Resume = &sdk.SessionResumeCapabilities{}
	}
	return c
}
