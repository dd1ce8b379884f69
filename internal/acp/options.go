package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/model"
)

// modelList is the configured model and the models offered.
type modelList struct {
	current string
	offered []model.Info
}

func (s *session) options(context.Context) ([]sdk.SessionConfigOption, *sdk.SessionModeState) {
	return nil, nil
}

func (s *session) switchModel(context.Context) error { return nil }

func (s *session) autoEdit() bool { return false }

func (s *server) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

func (s *server) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}
