package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/acp/store"
	"github.com/gemkit/gemkit/internal/model"
)

// The session methods that rest on the store: session/list,
// session/load, session/resume and session/delete.

// ListSessions lists the stored sessions, of the folder cwd when it is
// given, most recently updated first, a page at a time. A stored file
// whose first line cannot be read is left out, and told in the log.
func (s *server) ListSessions(_ context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	st := s.cfg.Sessions
	if st == nil {
		return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
	}
	var cwd, cur string
	if p.Cwd != nil && *p.Cwd != "" {
		if cwd = *p.Cwd; !filepath.IsAbs(cwd) {
			return sdk.ListSessionsResponse{}, withWords(sdk.NewInvalidParams, fmt.Sprintf("cwd %q must be an absolute path", cwd))
		}
	}
	if p.Cursor != nil {
		cur = *p.Cursor
	}
	page, err := st.List(cwd, cur)
	switch {
	case errors.Is(err, store.ErrBadCursor):
		return sdk.ListSessionsResponse{}, withWords(sdk.NewInvalidParams, err.Error())
	case err != nil:
		return sdk.ListSessionsResponse{}, withWords(sdk.NewInternalError, err.Error())
	}
	for _, pr := range page.Problems {
		s.cfg.Log.Warn(pr.Error())
	}
	resp := sdk.ListSessionsResponse{Sessions: make([]sdk.SessionInfo, 0, len(page.Sessions))}
	for _, m := range page.Sessions {
		info := sdk.SessionInfo{SessionId: sdk.SessionId(m.ID), Cwd: m.Cwd, UpdatedAt: sdk.Ptr(m.Updated.UTC().Format(time.RFC3339))}
		if m.Title != "" {
			info.Title = sdk.Ptr(m.Title)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if page.Next != "" {
		resp.NextCursor = sdk.Ptr(page.Next)
	}
	return resp, nil
}

// LoadSession opens a stored session and replays its conversation as
// session/update notifications before it answers.
func (s *server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	sess, err := s.reopen(ctx, string(p.SessionId), p.Cwd, p.AdditionalDirectories, p.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	sess.replay()
	opts, modes := sess.options(ctx)
	return sdk.LoadSessionResponse{ConfigOptions: opts, Modes: modes}, nil
}

// ResumeSession opens a stored session without replaying it.
func (s *server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	sess, err := s.reopen(ctx, string(p.SessionId), p.Cwd, p.AdditionalDirectories, p.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	opts, modes := sess.options(ctx)
	return sdk.ResumeSessionResponse{ConfigOptions: opts, Modes: modes}, nil
}

// reopen is the session id, open in this connection already or read from
// the store and opened, in the folder cwd, which must be the one it was
// created in. A stored session that cannot be read is an error in
// words; nothing else is touched.
func (s *server) reopen(ctx context.Context, id, cwd string, dirs []string, servers []sdk.McpServer) (*session, error) {
	st := s.cfg.Sessions
	if st == nil {
		return nil, withWords(sdk.NewInvalidRequest, "this gemkit acp stores no sessions")
	}
	s.mu.Lock()
	open := s.sessions[sdk.SessionId(id)]
	s.mu.Unlock()
	if open != nil {
		if filepath.Clean(open.cwd) != filepath.Clean(cwd) {
			return nil, withWords(sdk.NewInvalidParams, fmt.Sprintf("session %s belongs to the folder %s, not %s", id, open.cwd, cwd))
		}
		return open, nil
	}
	rec, err := st.Load(id)
	var pr *store.Problem
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, withWords(newResourceNotFound, fmt.Sprintf("gemkit has no stored session %q (it may have been deleted): start a new one", id))
	case errors.As(err, &pr):
		s.cfg.Log.Warn(pr.Error())
		return nil, withWords(sdk.NewInternalError, pr.Error())
	case err != nil:
		return nil, withWords(sdk.NewInternalError, err.Error())
	}
	if filepath.Clean(rec.Cwd) != filepath.Clean(cwd) {
		return nil, withWords(sdk.NewInvalidParams, fmt.Sprintf("session %s belongs to the folder %s, not %s: open it there", id, rec.Cwd, cwd))
	}
	rec.AdditionalDirectories = dirs
	return s.open(ctx, rec, servers)
}

// newResourceNotFound is ACP's "Resource not found" error (-32002),
// which the SDK has no constructor for.
func newResourceNotFound(data any) *sdk.RequestError {
	return &sdk.RequestError{Code: codeNotFound, Message: "Resource not found", Data: data}
}

// deleteMethod is the name session/delete reaches the SDK under (see
// inbound).
const deleteMethod = "_gemkit/session/delete"

// HandleExtensionMethod answers session/delete, which the SDK hands over
// as an extension method; any other extension method is not found.
func (s *server) HandleExtensionMethod(_ context.Context, method string, params json.RawMessage) (any, error) {
	if method != deleteMethod || s.cfg.Sessions == nil {
		return nil, sdk.NewMethodNotFound(method)
	}
	var p struct {
		SessionID *string `json:"sessionId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.SessionID == nil {
		return nil, withWords(sdk.NewInvalidParams, "session/delete needs a sessionId")
	}
	return struct{}{}, s.deleteSession(*p.SessionID)
}

// deleteSession forgets the session id: one open here is closed first,
// its running prompt stopped; one never stored is no error, as the
// protocol asks.
func (s *server) deleteSession(id string) error {
	s.mu.Lock()
	open := s.sessions[sdk.SessionId(id)]
	delete(s.sessions, sdk.SessionId(id))
	s.mu.Unlock()
	if open != nil {
		open.mu.Lock()
		open.deleted = true
		open.mu.Unlock()
		open.close()
	}
	if err := s.cfg.Sessions.Delete(id); err != nil {
		return withWords(sdk.NewInternalError, err.Error())
	}
	return nil
}

// afterTurn stores the conversation as the prompt left it, whatever its
// outcome, and gives a session its title from its first prompt (told
// to the client in a session_info_update).
func (s *session) afterTurn(blocks []sdk.ContentBlock, text string) {
	h := s.agent.History()
	s.mu.Lock()
	s.history = h
	s.meta.Updated = time.Now().UTC()
	titled := false
	if s.meta.Title == "" {
		s.meta.Title = store.Title(firstText(blocks, text))
		titled = s.meta.Title != ""
	}
	title, updated := s.meta.Title, s.meta.Updated.Format(time.RFC3339)
	s.mu.Unlock()
	s.save()
	if titled {
		s.update(sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{SessionUpdate: "session_info_update", Title: &title, UpdatedAt: &updated}})
	}
}

// firstText is the text of the prompt's first text block, else text.
func firstText(blocks []sdk.ContentBlock, text string) string {
	for _, b := range blocks {
		if b.Text != nil && b.Text.Text != "" {
			return b.Text.Text
		}
	}
	return text
}

// save stores the session as it stands; a store that fails is told in
// the log, and the session goes on.
func (s *session) save() {
	st := s.srv.cfg.Sessions
	if st == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return
	}
	rec := &store.Session{Meta: s.meta, History: s.history}
	if err := st.Save(rec); err != nil {
		s.srv.cfg.Log.Warn("the session is not stored", "session", s.id, "err", err)
		return
	}
	if rec.Dropped > s.meta.Dropped {
		s.srv.cfg.Log.Info(fmt.Sprintf("the stored session %s keeps its latest messages only: %d earliest are left out of its file, larger than %d MiB", s.id, rec.Dropped, store.MaxFile>>20))
	}
}

// countCalls is how many tool calls the model made in h: the next tool
// call's id follows them, so that no id repeats one a replay shows.
func countCalls(h []model.Message) int {
	n := 0
	for _, m := range h {
		n += len(m.Calls)
	}
	return n
}
