package acp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/model"
)

// A session's choices, as ACP's config options (session/set_config_option,
// config_option_update) and, for clients that still use them, as its
// modes (session/set_mode, current_mode_update): the model, and the
// approval mode.
const (
	optModel = "model"
	optMode  = "mode"
)

// The approval modes, named as Gemini CLI 0.61 names them in ACP
// (buildAvailableModes in @google/gemini-cli's bundle,
// gemini-NPCD6A4N.js). gemkit offers no "yolo": an extension tool's
// first run is always asked about.
const (
	modeDefault  = "default"
	modeAutoEdit = "autoEdit"
)

var approvalModes = []sdk.SessionMode{
	{Id: modeDefault, Name: "Default", Description: sdk.Ptr("Every edit is shown as a diff to accept or reject")},
	{Id: modeAutoEdit, Name: "Auto Edit", Description: sdk.Ptr("Edits are accepted without asking, except those of protected files; extension tools still ask")},
}

// modelList is the configured model and the models offered.
type modelList struct {
	current string
	offered []model.Info
}

// modelWait bounds how long a session's answer waits for the model
// list: a provider slow to list its models does not hold up the editor;
// the session offers the configured model until the list has come.
const modelWait = 2 * time.Second

// startList asks Config.ListModels for the list, once, in the
// background; a list that cannot be had is told in the log, and the
// configured model is offered alone.
func (s *server) startList() {
	s.listOnce.Do(func() {
		if s.cfg.ListModels == nil {
			close(s.listDone)
			return
		}
		go func() {
			defer close(s.listDone)
			list, err := s.cfg.ListModels(context.Background())
			if err != nil {
				s.cfg.Log.Warn("the model list is not available: only the configured model is offered", "err", err)
			}
			s.listed = list
		}()
	})
}

// models is the configured model and those offered, the list waited for
// up to modelWait.
func (s *server) models(ctx context.Context) *modelList {
	ml := &modelList{current: s.cfg.Model}
	if ml.current == "" {
		ml.current = "default"
	}
	s.startList()
	t := time.NewTimer(modelWait)
	defer t.Stop()
	select {
	case <-s.listDone:
		ml.offered = s.listed
	case <-t.C:
	case <-ctx.Done():
	}
	if !slices.ContainsFunc(ml.offered, func(i model.Info) bool { return i.ID == ml.current }) {
		ml.offered = append([]model.Info{{ID: ml.current, Name: ml.current}}, ml.offered...)
	}
	return ml
}

// modelOf is the model the session runs: the one it chose, else the
// configured one.
func (s *session) modelOf(ml *modelList) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta.Model != "" {
		return s.meta.Model
	}
	return ml.current
}

// modeOf is the session's approval mode.
func (s *session) modeOf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta.Mode == "" {
		return modeDefault
	}
	return s.meta.Mode
}

// autoEdit reports a session whose edits are accepted without asking.
func (s *session) autoEdit() bool { return s.modeOf() == modeAutoEdit }

// options are the session's config options and its modes, as they stand.
func (s *session) options(ctx context.Context) ([]sdk.SessionConfigOption, *sdk.SessionModeState) {
	ml := s.srv.models(ctx)
	cur := s.modelOf(ml)
	values := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(ml.offered)+1)
	if !slices.ContainsFunc(ml.offered, func(i model.Info) bool { return i.ID == cur }) {
		// A stored session's model that the list no longer offers.
		values = append(values, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(cur), Name: cur})
	}
	for _, m := range ml.offered {
		o := sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.ID), Name: m.ID}
		if m.Name != "" {
			o.Name = m.Name
		}
		if m.Description != "" {
			o.Description = sdk.Ptr(m.Description)
		}
		values = append(values, o)
	}
	modeValues := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(approvalModes))
	for _, m := range approvalModes {
		modeValues = append(modeValues, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description})
	}
	mode := s.modeOf()
	opts := []sdk.SessionConfigOption{
		{Select: &sdk.SessionConfigOptionSelect{Id: optModel, Name: "Model", Category: sdk.Ptr(sdk.SessionConfigOptionCategoryModel),
			Description:  sdk.Ptr("The model this session's next prompt goes to"),
			CurrentValue: sdk.SessionConfigValueId(cur), Options: sdk.SessionConfigSelectOptions{Ungrouped: &values}}},
		{Select: &sdk.SessionConfigOptionSelect{Id: optMode, Name: "Approval mode", Category: sdk.Ptr(sdk.SessionConfigOptionCategoryMode),
			Description:  sdk.Ptr("Whether edits are asked about"),
			CurrentValue: sdk.SessionConfigValueId(mode), Options: sdk.SessionConfigSelectOptions{Ungrouped: &modeValues}}},
	}
	return opts, &sdk.SessionModeState{AvailableModes: approvalModes, CurrentModeId: sdk.SessionModeId(mode)}
}

// SetSessionConfigOption changes the session's model (from its next
// prompt: a running one finishes with the model it began with) or its
// approval mode (at once), stores the choice, and answers every option.
// A change of mode is also told as current_mode_update.
func (s *server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		return sdk.SetSessionConfigOptionResponse{}, withWords(sdk.NewInvalidParams, "gemkit's options are selections: give value, not a boolean")
	}
	v := p.ValueId
	sess, err := s.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	value := string(v.Value)
	switch v.ConfigId {
	case optModel:
		ml := s.models(ctx)
		if !slices.ContainsFunc(ml.offered, func(i model.Info) bool { return i.ID == value }) && value != sess.modelOf(ml) {
			return sdk.SetSessionConfigOptionResponse{}, withWords(sdk.NewInvalidParams, fmt.Sprintf("model %q is not offered; choose one of %s", value, modelIDs(ml)))
		}
		sess.choose(func() { sess.meta.Model = value })
	case optMode:
		if err := sess.setMode(value); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		sess.update(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeId: sdk.SessionModeId(value)}})
	default:
		return sdk.SetSessionConfigOptionResponse{}, withWords(sdk.NewInvalidParams, fmt.Sprintf("no option %q: gemkit's are %q and %q", v.ConfigId, optModel, optMode))
	}
	opts, _ := sess.options(ctx)
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

// SetSessionMode changes the approval mode, for clients that use modes;
// the config options that changed with it are told in a
// config_option_update.
func (s *server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	sess, err := s.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	if err := sess.setMode(string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	opts, _ := sess.options(ctx)
	sess.update(sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{SessionUpdate: "config_option_update", ConfigOptions: opts}})
	return sdk.SetSessionModeResponse{}, nil
}

// setMode checks and stores the approval mode m.
func (s *session) setMode(m string) error {
	if !slices.ContainsFunc(approvalModes, func(x sdk.SessionMode) bool { return string(x.Id) == m }) {
		return withWords(sdk.NewInvalidParams, fmt.Sprintf("no approval mode %q: gemkit's are %q and %q", m, modeDefault, modeAutoEdit))
	}
	s.choose(func() { s.meta.Mode = m })
	return nil
}

// choose applies change to the session's meta under its lock and stores
// the session.
func (s *session) choose(change func()) {
	s.mu.Lock()
	change()
	s.mu.Unlock()
	s.save()
}

// switchModel, at the start of a prompt, gives the session an agent of
// the model it chose when its agent runs another, carrying the
// conversation over; turn is held.
func (s *session) switchModel(ctx context.Context) error {
	s.mu.Lock()
	want := s.meta.Model
	s.mu.Unlock()
	if want == s.agentModel {
		return nil
	}
	a, err := s.srv.cfg.NewAgent(ctx, s.given())
	if err != nil {
		if isCredentials(err) {
			return withWords(sdk.NewAuthRequired, err.Error())
		}
		return withWords(sdk.NewInternalError, fmt.Sprintf("the model %s cannot be used: %v", want, err))
	}
	s.setAgent(a, want)
	return nil
}

func modelIDs(ml *modelList) string {
	ids := make([]string, len(ml.offered))
	for i, m := range ml.offered {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}
