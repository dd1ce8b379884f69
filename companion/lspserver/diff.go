package lspserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gemkit/gemkit/companion"
)

// proposal is a change shown in a buffer, waiting for the person.
type proposal struct {
	path, uri string
	// base is the buffer's text before the proposal: reject restores it.
	base string
	// text is the proposal as applied; the accepted content when the
	// client never opened the buffer for gemkit (so no edit is seen).
	text string
	// disk is the file's content on disk when the proposal was shown,
	// what the agent had read; existed is false when there was no file.
	disk    []byte
	existed bool
	// stop ends the prompt that asks about this proposal, if any.
	stop context.CancelFunc
	// agent proposed it (companion.ProposedBy); "" when not known.
	agent string
	// doc is the buffer's document when the proposal was applied, and
	// seen its count of changes then: while the client reports none,
	// its buffer holds text.
	doc  *document
	seen int
}

// Severity of the diagnostics that mark a proposal: Information.
const severityInformation = 3

// ShowsDiffs implements companion.DiffShower: a client that cannot apply
// workspace edits (Vim's ALE) cannot be shown a proposal, so the CLI is
// told no diff tools and asks in its own terminal instead.
func (s *Server) ShowsDiffs() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps.applyEdit
}

// OpenDiff implements [companion.Editor]: the proposal replaces the text of
// filePath's buffer (opened by the client if need be), its lines are
// marked with diagnostics saying how to answer, and where the client can
// ask, it asks. The file on disk is not touched.
func (s *Server) OpenDiff(ctx context.Context, filePath, newContent string) error {
	path := filepath.Clean(filePath)
	s.mu.Lock()
	if s.phase != phaseRunning {
		s.mu.Unlock()
		return errors.New("the editor's language client is not connected")
	}
	if !s.caps.applyEdit {
		s.mu.Unlock()
		return errors.New("the editor's language client cannot apply workspace edits (capabilities.workspace.applyEdit), so it cannot show a diff")
	}
	caps := s.caps
	uri := uriOf(path)
	var current string
	d := s.docs[path]
	if d != nil {
		uri, current = d.uri, d.text
	}
	old := s.proposals[path]
	s.mu.Unlock()
	disk, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	existed := err == nil
	if d == nil {
		// The client loads the file from disk to apply the edit.
		current = string(disk)
	}
	if old != nil {
		// The agent read the file before the first proposal.
		disk, existed = old.disk, old.existed
	}
	base := current
	if old != nil {
		base = old.base // a new proposal replaces the old: reject restores the original
	}
	edit, first, last := lineEdit(current, newContent)
	// No label: Neovim 0.7 echoes it, which can raise a blocking
	// "Press ENTER" prompt.
	params := map[string]any{"edit": map[string]any{"changes": map[string][]TextEdit{uri: {edit}}}}
	res, err := s.applyProposal(ctx, path, params)
	if err != nil {
		if errors.Is(err, errGaveUp) {
			// The request stays with the client (eglot asks the person
			// first): a yes that comes later must not leave the proposal
			// in the buffer with nobody waiting for it.
			go s.undoLate(res.late, path, uri, newContent, current)
		}
		return fmt.Errorf("show the proposal in the editor: %w", err)
	}
	if !res.Applied {
		why := res.FailureReason
		if why == "" {
			why = "no reason given"
		}
		return fmt.Errorf("the editor did not apply the proposal to %s: %s", path, why)
	}
	pctx, stop := context.WithCancel(s.ctx)
	p := &proposal{path: path, uri: uri, base: base, text: newContent, disk: disk, existed: existed, stop: stop,
		agent: companion.ProposedBy(ctx)}
	s.mu.Lock()
	if old != nil {
		old.stop()
	}
	if p.doc = s.docs[path]; p.doc != nil {
		p.seen = p.doc.changes
	}
	s.proposals[path] = p
	s.mu.Unlock()
	s.mark(p, first, last)
	if caps.showDocument {
		go s.show(pctx, p, min(first, max(len(splitLines(newContent))-1, 0)))
	}
	if caps.showMessage {
		go s.ask(pctx, p)
	}
	return nil
}

// applyResult is the client's answer to the applyEdit of a proposal.
type applyResult struct {
	Applied       bool   `json:"applied"`
	FailureReason string `json:"failureReason"`
	// late delivers the answer that OpenDiff gave up waiting for.
	late <-chan lateAnswer
}

type lateAnswer struct {
	applied bool
	err     error
}

// errGaveUp marks an applyEdit that OpenDiff stopped waiting for while
// the client may still apply it.
var errGaveUp = errors.New("gave up waiting")

// applyProposal sends the applyEdit of a proposal to path and waits for
// the answer at most the request timeout, until ctx ends (the CLI went),
// or until CloseDiff of path (the person answered in the CLI). When it
// gives up, the error wraps errGaveUp and the answer still comes through
// late, for as long as the server runs.
func (s *Server) applyProposal(ctx context.Context, path string, params any) (applyResult, error) {
	abandon := make(chan struct{})
	s.mu.Lock()
	s.opening[path] = abandon
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.opening[path] == abandon {
			delete(s.opening, path)
		}
		s.mu.Unlock()
	}()
	type answer struct {
		res applyResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		var res applyResult
		err := s.call(s.ctx, 0, "workspace/applyEdit", params, &res)
		got <- answer{res, err}
	}()
	timer := time.NewTimer(s.opts.RequestTimeout)
	defer timer.Stop()
	var why error
	select {
	case a := <-got:
		return a.res, a.err
	case <-timer.C:
		why = fmt.Errorf("the editor did not answer workspace/applyEdit within %v", s.opts.RequestTimeout)
	case <-ctx.Done():
		why = ctx.Err()
	case <-abandon:
		why = errors.New("the diff was closed before the editor showed it")
	}
	late := make(chan lateAnswer, 1)
	go func() {
		a := <-got
		late <- lateAnswer{applied: a.err == nil && a.res.Applied, err: a.err}
	}()
	return applyResult{late: late}, fmt.Errorf("%w: %w", why, errGaveUp)
}

// undoLate waits for the answer to an applyEdit OpenDiff gave up on and,
// when the client applied it after all, puts the buffer's text from
// before it back.
func (s *Server) undoLate(late <-chan lateAnswer, path, uri, proposed, before string) {
	a := <-late
	if !a.applied {
		return
	}
	s.log.Info("lsp: the editor showed a proposal after gemkit stopped waiting; undoing it", "path", path)
	edit, _, _ := lineEdit(proposed, before)
	params := map[string]any{"edit": map[string]any{"changes": map[string][]TextEdit{uri: {edit}}}}
	var res struct {
		Applied bool `json:"applied"`
	}
	if err := s.call(s.ctx, s.opts.RequestTimeout, "workspace/applyEdit", params, &res); err != nil || !res.Applied {
		s.log.Warn("lsp: the editor did not undo a proposal nobody waits for", "path", path, "err", err)
	}
}

// mark publishes diagnostics on the proposed lines (and on line 0 when
// the proposal only deletes) that say how to answer (markMessage).
func (s *Server) mark(p *proposal, first, last int) {
	if last < first {
		last = first
	}
	s.notify("textDocument/publishDiagnostics", map[string]any{
		"uri": p.uri,
		"diagnostics": []map[string]any{{
			"range":    Range{Start: Position{Line: first}, End: Position{Line: last + 1}},
			"severity": severityInformation,
			"source":   "gemkit",
			"message":  markMessage(p),
		}},
	})
}

// savingFails tells whether saving the buffer to accept p makes its agent
// report the write as failed: Qwen Code (0.24.4) checks before it writes
// that the file is the one it read (checkPriorRead in its bundled
// chunks: the same inode, time and size), and an editor's save replaces
// the file, so it tells its model "File … has not been read in this
// session" although the file holds the accepted text. With it the way to
// accept is the Accept action, which leaves the write to the agent.
func savingFails(p *proposal) bool { return p.agent == companion.AgentQwen }

// markMessage is the diagnostic on a proposal's lines: who proposed it
// and how to answer, the way that works for that agent.
func markMessage(p *proposal) string {
	name := filepath.Base(p.path)
	if savingFails(p) {
		return fmt.Sprintf("Proposed by %s: a change to %s. Accept it (with your edits) with the code action \"Accept proposal\", or \"Reject proposal\"; do not save to accept: %s would report that its write failed.", p.agent, name, p.agent)
	}
	how := "ave to accept it (with your edits), or use the code action \"Reject proposal\" (\"Accept proposal\" accepts without saving)."
	if p.agent == "" {
		return fmt.Sprintf("Proposed change to %s: s%s", name, how)
	}
	return fmt.Sprintf("Proposed by %s: a change to %s. S%s", p.agent, name, how)
}

// askMessage is the question about a proposal: who proposed it and how
// to answer, the way that works for that agent.
func askMessage(p *proposal) string {
	by := ""
	if p.agent != "" {
		by = " by " + p.agent
	}
	then := "then save to accept"
	if savingFails(p) {
		then = "then accept with the code action \"Accept proposal\", not by saving: " + p.agent + " would report that its write failed"
	}
	return fmt.Sprintf("gemkit: a change to %s%s is proposed in its buffer. Accept it, reject it, or edit it first (%s).", p.path, by, then)
}

func (s *Server) clearMarks(p *proposal) {
	s.notify("textDocument/publishDiagnostics", map[string]any{"uri": p.uri, "diagnostics": []any{}})
}

// show brings the proposal into view where the client can
// (window/showDocument, LSP 3.16), at line, which must be one of the
// proposal's. It does not take the focus: the person is often typing in
// the agent's terminal, which keeps it, and Neovim (0.8 and later) fails
// to focus a file from a terminal window in Terminal mode ("Can't
// re-enter normal mode from terminal mode", runtime/lua/vim/lsp/util.lua,
// show_document: normal! m'), which it reports with a Press ENTER prompt.
// Without focus it shows the file in a window that has it, else in a new
// window beside the current one.
func (s *Server) show(ctx context.Context, p *proposal, line int) {
	params := map[string]any{"uri": p.uri, "takeFocus": false, "selection": Range{Start: Position{Line: line}, End: Position{Line: line}}}
	if err := s.call(ctx, s.opts.RequestTimeout, "window/showDocument", params, nil); err != nil && ctx.Err() == nil {
		s.log.Warn("lsp: the editor did not show the proposal's file", "path", p.path, "err", err)
	}
}

// Titles of the prompt's answers.
const (
	answerAccept = "Accept"
	answerReject = "Reject"
	answerLater  = "Edit first"
)

// ask asks the person with window/showMessageRequest. No answer (a
// dismissed prompt is null in Neovim 0.7; eglot sends nothing on C-g)
// leaves the proposal open, to be answered by saving or a code action.
func (s *Server) ask(ctx context.Context, p *proposal) {
	params := map[string]any{
		"type":    severityInformation,
		"message": askMessage(p),
		"actions": []map[string]string{{"title": answerAccept}, {"title": answerReject}, {"title": answerLater}},
	}
	var answer *struct {
		Title string `json:"title"`
	}
	if err := s.call(ctx, 0, "window/showMessageRequest", params, &answer); err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("lsp: asking about the proposal", "path", p.path, "err", err)
		}
		return
	}
	if answer == nil {
		return
	}
	switch answer.Title {
	case answerAccept:
		s.accept(p, true)
	case answerReject:
		s.reject(p, true, true)
	}
}

// take removes p if it is still the proposal of its path.
func (s *Server) take(p *proposal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proposals[p.path] != p {
		return false
	}
	delete(s.proposals, p.path)
	p.stop()
	return true
}

// bufferText is the current text of p's buffer as gemkit knows it: the
// proposal itself until the client reports a change after applying it
// (Neovim holds its didChange back while its question about the
// proposal is up).
func (s *Server) bufferText(p *proposal) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.docs[p.path]; d != nil && (d != p.doc || d.changes != p.seen) {
		return d.text
	}
	return p.text
}

// settle waits for edits the client may still hold back: an answer to a
// prompt is a response, which Neovim sends before its pending didChange.
func (s *Server) settle(yes bool) {
	if !yes {
		return
	}
	select {
	case <-time.After(s.opts.Settle):
	case <-s.ctx.Done():
	}
}

// accept resolves p with its buffer's text, the person's edits included.
func (s *Server) accept(p *proposal, settle bool) {
	s.settle(settle)
	if !s.take(p) {
		return
	}
	content := s.bufferText(p)
	s.clearMarks(p)
	s.events().DiffAccepted(p.path, content)
}

// reject restores the buffer's text from before the proposal (unless a
// code action's edit did), then resolves p as rejected.
func (s *Server) reject(p *proposal, restore, settle bool) {
	s.settle(settle)
	if !s.take(p) {
		return
	}
	if restore {
		s.restore(p)
	}
	s.clearMarks(p)
	s.events().DiffRejected(p.path)
}

// withdrawGrace bounds how long a stopping server waits for the client to
// put its buffers back (eglot asks the person before it applies an edit).
const withdrawGrace = 2 * time.Second

// withdraw rejects every proposal still in a buffer and puts the text
// from before it back, for a server that stops while its client runs:
// no proposal stays in a buffer with nobody waiting for it, where a save
// would write it as the person's own text.
func (s *Server) withdraw() {
	s.mu.Lock()
	waiting := make([]*proposal, 0, len(s.proposals))
	for _, p := range s.proposals {
		waiting = append(waiting, p)
	}
	s.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for _, p := range waiting {
			wg.Go(func() { s.reject(p, true, false) })
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(withdrawGrace):
		s.log.Warn("lsp: the editor did not put back the buffers of the proposals still waiting as gemkit stopped", "proposals", len(waiting))
	}
}

// restore puts the text from before p back into its buffer, unless it is
// there already (a code action's own edit restored it).
func (s *Server) restore(p *proposal) {
	current := s.bufferText(p)
	if current == p.base {
		return
	}
	edit, _, _ := lineEdit(current, p.base)
	params := map[string]any{"edit": map[string]any{"changes": map[string][]TextEdit{p.uri: {edit}}}}
	var res struct {
		Applied bool `json:"applied"`
	}
	if err := s.call(s.ctx, s.opts.RequestTimeout, "workspace/applyEdit", params, &res); err != nil || !res.Applied {
		s.log.Warn("lsp: the editor did not restore the buffer after a rejected proposal", "path", p.path, "err", err)
	}
}

// CloseDiff implements [companion.Editor]: the person answered in the CLI.
// The buffer gets its text from before the proposal back (an accepting
// CLI writes the file itself) and the proposal's text is returned.
func (s *Server) CloseDiff(_ context.Context, filePath string) (string, bool, error) {
	path := filepath.Clean(filePath)
	s.mu.Lock()
	p := s.proposals[path]
	if abandon := s.opening[path]; abandon != nil {
		// Not shown yet (the client asks first): OpenDiff stops waiting.
		close(abandon)
		delete(s.opening, path)
	}
	s.mu.Unlock()
	if p == nil || !s.take(p) {
		return "", false, nil
	}
	content := s.bufferText(p)
	s.clearMarks(p)
	go s.restore(p) // the client may ask first (eglot): never hold up the CLI
	return content, true, nil
}

// FileWritten implements [companion.Editor]. LSP has no request to reload
// a buffer; clients reload unmodified buffers from disk themselves.
func (s *Server) FileWritten(context.Context, string) error { return nil }

// codeAction is an LSP CodeAction with a command.
type codeAction struct {
	Title   string         `json:"title"`
	Kind    string         `json:"kind"`
	Edit    map[string]any `json:"edit,omitempty"`
	Command command        `json:"command"`
}

type command struct {
	Title     string `json:"title"`
	Command   string `json:"command"`
	Arguments []any  `json:"arguments"`
}

// codeActions offers Accept and Reject on a file with a proposal. Reject
// carries the restoring edit itself: clients apply a code action's edit
// without asking (eglot asks before a server's own applyEdit).
func (s *Server) codeActions(uri string) []codeAction {
	path := pathOf(uri)
	s.mu.Lock()
	p := s.proposals[path]
	s.mu.Unlock()
	if p == nil {
		return []codeAction{}
	}
	reject := codeAction{
		Title:   "Reject proposal (gemkit)",
		Kind:    "quickfix",
		Command: command{Title: "Reject proposal", Command: CommandReject, Arguments: []any{p.uri}},
	}
	if current := s.bufferText(p); current != p.base {
		edit, _, _ := lineEdit(current, p.base)
		reject.Edit = map[string]any{"changes": map[string][]TextEdit{p.uri: {edit}}}
		reject.Command.Arguments = append(reject.Command.Arguments, true)
	}
	return []codeAction{
		{Title: "Accept proposal (gemkit)", Kind: "quickfix", Command: command{Title: "Accept proposal", Command: CommandAccept, Arguments: []any{p.uri}}},
		reject,
	}
}

// executeCommand runs Accept or Reject. It answers at once: restoring a
// buffer is a request to the client, which must not wait on this one.
// Reject's second argument says the code action's own edit restored the
// buffer (clients apply it before running the command, but eglot reports
// the change only after it).
func (s *Server) executeCommand(name string, args []json.RawMessage) *Error {
	if name != CommandAccept && name != CommandReject {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params for workspace/executeCommand: unknown command " + name}
	}
	var uri string
	if len(args) < 1 || len(args) > 2 || json.Unmarshal(args[0], &uri) != nil {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params for workspace/executeCommand: " + name + " takes the file's URI"}
	}
	restored := len(args) == 2 && string(args[1]) == "true"
	s.mu.Lock()
	p := s.proposals[pathOf(uri)]
	s.mu.Unlock()
	if p == nil {
		return &Error{Code: CodeInvalidParams, Message: "no proposal is waiting for " + uri + " (already answered?)"}
	}
	if name == CommandAccept {
		// The person's last keystrokes may not have reached gemkit yet:
		// eglot sends them 0.5 s after typing stops, not before a command.
		go s.accept(p, true)
	} else {
		go s.reject(p, !restored, false)
	}
	return nil
}
