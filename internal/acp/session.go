package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/acp/store"
	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// codeNotFound is ACP's "Resource not found" error, which a client may
// answer to fs/read_text_file for a file that does not exist.
const codeNotFound = -32002

// maxShown bounds a tool result's text shown in the client.
const maxShown = 8 << 10

// session is one ACP session: one agent, one conversation. Prompts run
// one at a time.
type session struct {
	srv    *server
	id     sdk.SessionId
	caps   sdk.FileSystemCapabilities
	client string
	mcp    *mcpTools
	// cwd is the folder the client gave, the agent's workspace; root is
	// it with symbolic links resolved, as the agent names files. The
	// client is given them under cwd.
	cwd, root string

	// turn is held by a prompt, which alone uses agent and the fields
	// below it.
	turn  sync.Mutex
	agent *agent.Agent
	// agentModel is the model agent was built with ("": the configured
	// one); a prompt builds a new agent when the session chose another.
	agentModel string
	// Set during a turn, read by the host and the event handler, which
	// run on the turn's goroutine.
	calls  int
	cur    sdk.ToolCallId
	curArg json.RawMessage
	curN   string

	// mu guards what the client may change or read while a prompt runs.
	mu sync.Mutex
	// meta is what is stored of the session besides its conversation;
	// meta.Model and meta.Mode are its config options' values.
	meta store.Meta
	// history is the conversation as the last prompt left it.
	history []model.Message
	// cancel stops the running prompt (nil when none runs).
	cancel context.CancelFunc
	// deleted is set by session/delete: nothing is stored any more.
	deleted bool
}

// newSession is the session rec describes, of srv, with the client's
// capabilities; srv.mu is held.
func newSession(srv *server, rec *store.Session) *session {
	s := &session{srv: srv, id: sdk.SessionId(rec.ID), caps: srv.client.Fs, client: srv.name, cwd: rec.Cwd, root: rec.Cwd,
		meta: rec.Meta, history: rec.History}
	if r, err := filepath.EvalSymlinks(rec.Cwd); err == nil {
		s.root = r
	}
	return s
}

// given is what the session gives the agent the command builds for it:
// itself as the host and the tools' Asker, its sinks, its MCP tools, its
// model.
func (s *session) given() Session {
	s.mu.Lock()
	m := s.meta.Model
	s.mu.Unlock()
	g := Session{Cwd: s.cwd, Host: s, Ask: s.AllowTool, OnText: func(t string) { s.update(sdk.UpdateAgentMessageText(t)) }, OnEvent: s.event, Model: m}
	if s.mcp != nil {
		g.Tools = []agent.ToolSource{s.mcp}
	}
	return g
}

// setAgent makes a, built with the model named m, the session's agent,
// carrying on the conversation so far.
func (s *session) setAgent(a *agent.Agent, m string) {
	s.mu.Lock()
	h := s.history
	s.mu.Unlock()
	a.SetHistory(h)
	s.agent, s.agentModel = a, m
	s.calls = countCalls(h)
}

// clientPath is the path of the agent's file abs as the client knows it:
// under the cwd the client gave, even where that cwd goes through a
// symbolic link (as /tmp does on macOS), so that the editor finds its
// buffer.
func (s *session) clientPath(abs string) string {
	rel, ok := fsutil.Rel(s.root, abs)
	if !ok {
		return abs
	}
	return filepath.Join(s.cwd, rel)
}

// close stops the running prompt, if any, and the MCP servers.
func (s *session) close() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	if s.mcp != nil {
		s.mcp.close()
	}
}

func (s *session) update(u sdk.SessionUpdate) {
	if err := s.srv.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: s.id, Update: u}); err != nil {
		s.srv.cfg.Log.Debug("session/update", "err", err)
	}
}

func (s *session) prompt(ctx context.Context, blocks []sdk.ContentBlock) (sdk.PromptResponse, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
		cancel()
	}()
	text, err := s.promptText(ctx, blocks)
	if err != nil {
		return sdk.PromptResponse{}, withWords(sdk.NewInvalidParams, err.Error())
	}
	if err := s.switchModel(ctx); err != nil {
		return sdk.PromptResponse{}, err
	}
	out := s.agent.Run(ctx, text)
	s.afterTurn(blocks, text)
	reason, err := stopReason(out)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: reason}, nil
}

// promptText turns the prompt's content blocks into the person's message:
// text as it is, files (linked or embedded) inline with their path, as
// Gemini CLI's IDE context carries them.
func (s *session) promptText(ctx context.Context, blocks []sdk.ContentBlock) (string, error) {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
	}
	for _, blk := range blocks {
		switch {
		case blk.Text != nil:
			sep()
			b.WriteString(blk.Text.Text)
		case blk.ResourceLink != nil:
			sep()
			l := blk.ResourceLink
			path, ok := filePath(l.Uri)
			if !ok {
				fmt.Fprintf(&b, "[Linked resource %s: %s]", l.Name, l.Uri)
				continue
			}
			text, err := s.readForPrompt(ctx, path)
			if err != nil {
				fmt.Fprintf(&b, "[Linked file %s could not be read: %v]", path, err)
				continue
			}
			inline(&b, path, text)
		case blk.Resource != nil:
			sep()
			r := blk.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				name := r.TextResourceContents.Uri
				if p, ok := filePath(name); ok {
					name = p
				}
				inline(&b, name, r.TextResourceContents.Text)
			case r.BlobResourceContents != nil:
				fmt.Fprintf(&b, "[Embedded binary resource %s, not shown]", r.BlobResourceContents.Uri)
			}
		case blk.Image != nil, blk.Audio != nil:
			return "", errors.New("gemkit accepts text, resource_link and resource blocks (promptCapabilities: embeddedContext); images and audio are not offered")
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", errors.New("the prompt is empty")
	}
	return b.String(), nil
}

func inline(b *strings.Builder, name, text string) {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "Content of %s:\n%s\n%s\n%s", name, fence, strings.TrimSuffix(text, "\n"), fence)
}

// filePath returns the path of a file: URI.
func filePath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

func (s *session) readForPrompt(ctx context.Context, path string) (string, error) {
	text, handled, err := s.ReadTextFile(ctx, path)
	if handled {
		return text, err
	}
	data, err := s.readLinked(path)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(data) {
		return "", errors.New("not UTF-8 text")
	}
	return string(data), nil
}

// maxLinked bounds a file linked in a prompt that gemkit reads itself.
const maxLinked = 1 << 20

// readLinked reads a file the person linked in the prompt. One in the
// workspace, where tools write, is read through the workspace's Root (a
// link a tool planted there leads nowhere else); one elsewhere is the
// person's own choice, opened as it is named. Either way only a regular
// file is read, without blocking on a FIFO.
func (s *session) readLinked(path string) ([]byte, error) {
	var f *os.File
	rel, ok := fsutil.Rel(s.root, filepath.Clean(path))
	if !ok {
		rel, ok = fsutil.Rel(s.cwd, filepath.Clean(path))
	}
	if ok {
		root, err := fsutil.OpenRoot(s.root)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		if f, err = root.Open(rel); err != nil {
			return nil, err
		}
	} else {
		var err error
		if f, err = fsutil.OpenRegular(path); err != nil {
			return nil, err
		}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLinked+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxLinked {
		return nil, fmt.Errorf("larger than %d bytes", maxLinked)
	}
	return data, nil
}

// ReadTextFile implements agent.Host: through the client's
// fs/read_text_file when it offers it, so the model sees the editor's
// unsaved buffer. "Resource not found" means the file does not exist.
func (s *session) ReadTextFile(ctx context.Context, abs string) (string, bool, error) {
	if !s.caps.ReadTextFile {
		return "", false, nil
	}
	resp, err := s.srv.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: s.id, Path: s.clientPath(abs)})
	if err != nil {
		var re *sdk.RequestError
		if errors.As(err, &re) && re.Code == codeNotFound {
			return "", true, fmt.Errorf("%s: %w", s.client, fs.ErrNotExist)
		}
		return "", true, fmt.Errorf("%s could not read it: %w", s.client, err)
	}
	return resp.Content, true, nil
}

// ReviewsProtected implements agent.Reviewer: Review asks about
// a protected file in a permission request of its own.
func (s *session) ReviewsProtected() bool { return true }

// WriteTextFile implements agent.Host: through the client's
// fs/write_text_file when it offers it (the editor updates its buffer),
// else gemkit writes the disk atomically, through the folder it held
// since the review. The agent has checked, right before this call,
// that the folder is still the one reviewed and reached without a link
// (see agent's folder.recheck); the client then writes by path, which
// leaves the time of one request for a link to be swapped in. No tool of
// this session runs meanwhile (the agent runs one call at a time, and a
// tool's processes end with its call), so only a tool run by another
// gemkit process at that very moment could try, and only where its own
// sandbox lets it write.
func (s *session) WriteTextFile(ctx context.Context, abs, content string) (bool, error) {
	if !s.caps.WriteTextFile {
		return false, nil
	}
	if _, err := s.srv.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: s.id, Path: s.clientPath(abs), Content: content}); err != nil {
		return true, fmt.Errorf("%s could not write it: %w", s.client, err)
	}
	return true, nil
}

// Review implements agent.Reviewer: the edit is a session/request_permission
// carrying the tool call with its diff. A protected file gets a request
// of its own: its title says so, the reason comes before the diff, and
// the option that writes it names it, so the person allows that very
// file. In the approval mode autoEdit, an edit of a file that is not
// protected is accepted without asking.
func (s *session) Review(ctx context.Context, p agent.Proposal) (agent.Decision, error) {
	if p.Protected == "" && s.autoEdit() {
		// The person chose the approval mode autoEdit for this session.
		return agent.Decision{Accepted: true, Content: p.New, Where: s.client}, nil
	}
	tc := sdk.ToolCallUpdate{
		ToolCallId: s.cur,
		Title:      sdk.Ptr(editTitle(p.Rel, p.IsNew)),
		Kind:       sdk.Ptr(sdk.ToolKindEdit),
		Status:     sdk.Ptr(sdk.ToolCallStatusPending),
		Locations:  []sdk.ToolCallLocation{{Path: s.clientPath(p.Path)}},
		Content:    []sdk.ToolCallContent{s.diffContent(p)},
	}
	opts := []sdk.PermissionOption{
		{OptionId: "allow", Name: "Accept", Kind: sdk.PermissionOptionKindAllowOnce},
		{OptionId: "reject", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	}
	if p.Protected != "" {
		tc.Title = sdk.Ptr(editTitle(p.Rel, p.IsNew) + " (a protected file)")
		warn := sdk.ToolContent(sdk.TextBlock(extension.Printable(p.Protected) + ". Allow this edit only if you mean this very file to change."))
		tc.Content = append([]sdk.ToolCallContent{warn}, tc.Content...)
		opts[0] = sdk.PermissionOption{OptionId: "allow", Name: "Allow editing the protected file " + extension.Printable(p.Rel), Kind: sdk.PermissionOptionKindAllowOnce}
	}
	choice, err := s.ask(ctx, tc, opts)
	if err != nil {
		return agent.Decision{}, err
	}
	return agent.Decision{Accepted: choice == "allow", Content: p.New, Where: s.client}, nil
}

func (s *session) diffContent(p agent.Proposal) sdk.ToolCallContent {
	d := &sdk.ToolCallContentDiff{Type: "diff", Path: s.clientPath(p.Path), NewText: p.New}
	if !p.IsNew {
		d.OldText = sdk.Ptr(p.Old)
	}
	return sdk.ToolCallContent{Diff: d}
}

func editTitle(rel string, isNew bool) string {
	if isNew {
		return "Create " + rel
	}
	return "Edit " + rel
}

// AllowTool is the session's toolrun.Asker: an extension tool's first
// run asks with its permissions in words, after the files changed since
// an earlier consent when there was one, in a form where the client
// declares form elicitation (elicit.go), else in a permission request. "Always" records consent as
// `gemkit extensions run --consent` does; "once" lets this run go only.
func (s *session) AllowTool(ctx context.Context, q toolrun.ConsentRequest) (toolrun.Answer, error) {
	if s.elicitsForm() {
		return s.allowByForm(ctx, q) // elicit.go
	}
	ext := q.Extension
	question := q.Question(s.curN, "\n\n", "- ")
	tc := sdk.ToolCallUpdate{
		ToolCallId: s.cur,
		Title:      sdk.Ptr(fmt.Sprintf("Run %s (extension %s)", s.curN, extension.Printable(ext))),
		Kind:       sdk.Ptr(sdk.ToolKindOther),
		Status:     sdk.Ptr(sdk.ToolCallStatusPending),
		Content:    []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(question))},
		RawInput:   s.curArg,
	}
	opts := []sdk.PermissionOption{
		{OptionId: "allow_once", Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
		{OptionId: "allow_always", Name: "Always allow " + extension.Printable(ext), Kind: sdk.PermissionOptionKindAllowAlways},
		{OptionId: "reject", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	}
	choice, err := s.ask(ctx, tc, opts)
	switch {
	case err != nil:
		return toolrun.Decline, err
	case choice == "allow_once":
		return toolrun.AllowOnce, nil
	case choice == "allow_always":
		return toolrun.AllowAlways, nil
	}
	return toolrun.Decline, nil
}

// ask sends session/request_permission and returns the option chosen. A
// request left unanswered for the permission timeout, or cancelled, is an
// error: nothing is written or run.
func (s *session) ask(ctx context.Context, tc sdk.ToolCallUpdate, opts []sdk.PermissionOption) (sdk.PermissionOptionId, error) {
	tctx, cancel := context.WithTimeout(ctx, s.srv.cfg.PermissionTimeout)
	defer cancel()
	resp, err := s.srv.conn.RequestPermission(tctx, sdk.RequestPermissionRequest{SessionId: s.id, ToolCall: tc, Options: opts})
	if err != nil && tctx.Err() != nil {
		s.cancelSent(tc.ToolCallId)
	} else {
		s.srv.wire.forget(s.id, tc.ToolCallId)
	}
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case tctx.Err() != nil:
		return "", fmt.Errorf("%s did not answer the permission request within %v", s.client, s.srv.cfg.PermissionTimeout)
	case err != nil:
		return "", fmt.Errorf("ask %s: %w", s.client, err)
	case resp.Outcome.Selected != nil:
		return resp.Outcome.Selected.OptionId, nil
	}
	return "", context.Canceled
}

// cancelWait bounds how long a permission request given up waits for
// its $/cancel_request to be written: the SDK writes it from a goroutine
// of its own at once, and drops it only when the client is gone.
const cancelWait = 5 * time.Second

// cancelSent returns once the $/cancel_request of the permission request
// given up for the tool call is written. The SDK sends it from a
// goroutine of its own; without this wait the prompt's answer
// ("cancelled", or the turn going on after a timeout) could reach the
// client first, and the client would then be told to cancel a request of
// a turn already over. The protocol's TypeScript library writes the
// cancel before it stops waiting, in the connection's order.
func (s *session) cancelSent(id sdk.ToolCallId) {
	t := time.NewTimer(cancelWait)
	defer t.Stop()
	select {
	case <-s.srv.wire.cancelWritten(s.id, id):
	case <-s.srv.conn.Done():
	case <-t.C:
		s.srv.cfg.Log.Debug("no $/cancel_request written for a permission request given up", "session", s.id, "toolCall", id)
	}
}

// event reports the agent's tool calls as tool_call and tool_call_update.
func (s *session) event(e agent.Event) {
	switch e.Type {
	case agent.EventToolCall:
		s.calls++
		s.cur = sdk.ToolCallId(fmt.Sprintf("call_%d", s.calls))
		s.curArg, s.curN = e.Args, e.Name
		title, kind, locs := s.describe(e.Name, e.Args)
		status := sdk.ToolCallStatusInProgress
		if kind == sdk.ToolKindEdit {
			status = sdk.ToolCallStatusPending
		}
		s.update(sdk.StartToolCall(s.cur, title, sdk.WithStartKind(kind), sdk.WithStartStatus(status),
			sdk.WithStartLocations(locs), sdk.WithStartRawInput(json.RawMessage(rawOrEmpty(e.Args)))))
	case agent.EventToolResult:
		if s.cur == "" {
			// A text-protocol block that could not be read: no call started.
			return
		}
		s.update(resultUpdate(s.cur, e.Text, e.IsError))
		s.cur = ""
	case agent.EventNotice:
		s.srv.cfg.Log.Info(e.Text, "session", s.id)
	}
}

func rawOrEmpty(raw json.RawMessage) []byte {
	if len(raw) == 0 || !json.Valid(raw) {
		return []byte("{}")
	}
	return raw
}

// describe gives a tool call's title, kind and locations.
func (s *session) describe(name string, args json.RawMessage) (string, sdk.ToolKind, []sdk.ToolCallLocation) {
	var a struct {
		Path      string `json:"path"`
		Extension string `json:"extension"`
		Name      string `json:"name"`
	}
	_ = json.Unmarshal(args, &a)
	loc := func() []sdk.ToolCallLocation {
		if a.Path == "" {
			return nil
		}
		p := a.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.cwd, p)
		}
		return []sdk.ToolCallLocation{{Path: filepath.Clean(p)}}
	}
	switch name {
	case "read_file":
		return "Read " + a.Path, sdk.ToolKindRead, loc()
	case "list_files":
		p := a.Path
		if p == "" {
			p = "."
		}
		a.Path = p
		return "List " + p, sdk.ToolKindSearch, loc()
	case "propose_edit":
		return "Edit " + a.Path, sdk.ToolKindEdit, loc()
	case "read_doc":
		return fmt.Sprintf("Read the doc %s of %s", a.Name, a.Extension), sdk.ToolKindRead, nil
	}
	if s.mcp != nil {
		if t, ok := s.mcp.byName[name]; ok {
			return fmt.Sprintf("%s (MCP server %s)", t.tool, t.server), sdk.ToolKindOther, nil
		}
	}
	return name, sdk.ToolKindOther, nil
}
