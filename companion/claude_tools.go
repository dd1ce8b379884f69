package companion

// Claude Code's tools: its diffs as tabs, and the editor's diagnostics.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/ide"
)

func (c *claudeEndpoint) openDiff(ctx context.Context, args map[string]any) (*callResult, error) {
	path, _ := args["new_file_path"].(string)
	if path == "" {
		path, _ = args["old_file_path"].(string)
	}
	contents, ok := args["new_file_contents"].(string)
	tab, _ := args["tab_name"].(string)
	if path == "" || !ok {
		return toolError("openDiff: new_file_path and new_file_contents (strings) are required"), nil
	}
	if !filepath.IsAbs(path) {
		return toolError(fmt.Sprintf("openDiff: new_file_path must be an absolute path, not %q", path)), nil
	}
	if tab == "" {
		tab = path
	}
	answer := make(chan diffOutcome, 1)
	e := c.srv.registerDiff(path, "", answer)
	c.mu.Lock()
	c.tabs[tab] = path
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.tabs[tab] == path {
			delete(c.tabs, tab)
		}
		c.mu.Unlock()
	}()
	octx, cancel := context.WithTimeout(WithProposer(ctx, AgentClaude), c.srv.cfg.EditorTimeout)
	err := c.srv.editor.OpenDiff(octx, path, contents)
	cancel()
	if err != nil {
		c.srv.diffs.drop(path, e)
		return toolError(fmt.Sprintf("Failed to open diff for %s: %v", path, err)), nil
	}
	// Each answer takes e out of the registry before it is sent.
	o, ok := awaitPerson(ctx, answer, func() bool { return !c.srv.diffs.holds(path, e) })
	if !ok {
		// Claude Code went away: close the diff it left.
		if c.srv.diffs.takeIf(path, e) {
			cctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.EditorTimeout)
			_, _, _ = c.srv.editor.CloseDiff(cctx, path)
			cancel()
		}
		return nil, ctx.Err()
	}
	switch {
	case o.replaced:
		return toolError("openDiff: another diff of " + path + " replaced this one"), nil
	case o.closed:
		return textResult(claudeTabClosed), nil
	case o.accepted:
		return textResult(claudeFileSaved, o.content), nil
	default:
		return textResult(claudeDiffRejected, tab), nil
	}
}

// awaitPerson waits for the person's answer to a diff, or ctx's end (ok
// false). The wait is the person's (park): a peer closed at shutdown
// waits for the replies under way, not for people; answered says whether
// the answer has been given, even if this goroutine has not woken yet.
func awaitPerson(ctx context.Context, answer <-chan diffOutcome, answered func() bool) (o diffOutcome, ok bool) {
	defer park(ctx, answered)()
	select {
	case o = <-answer:
		return o, true
	case <-ctx.Done():
		return diffOutcome{}, false
	}
}

// closeDiffTab closes the waiting diff of path in the editor and answers
// its openDiff with TAB_CLOSED.
func (c *claudeEndpoint) closeDiffTab(ctx context.Context, path string) error {
	_, e := c.srv.diffs.takeWaiting(path)
	if e == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.srv.cfg.EditorTimeout)
	defer cancel()
	_, _, err := c.srv.editor.CloseDiff(ctx, path)
	e.answer <- diffOutcome{closed: true}
	return err
}

func (c *claudeEndpoint) closeTab(ctx context.Context, args map[string]any) (*callResult, error) {
	tab, _ := args["tab_name"].(string)
	c.mu.Lock()
	path, ok := c.tabs[tab]
	c.mu.Unlock()
	if ok {
		if err := c.closeDiffTab(ctx, path); err != nil {
			return toolError(fmt.Sprintf("close_tab: %v", err)), nil
		}
	}
	return textResult(claudeTabClosed), nil
}

func (c *claudeEndpoint) closeAllDiffTabs(ctx context.Context, _ map[string]any) (*callResult, error) {
	c.mu.Lock()
	paths := make([]string, 0, len(c.tabs))
	for _, p := range c.tabs {
		paths = append(paths, p)
	}
	c.mu.Unlock()
	for _, p := range paths {
		if err := c.closeDiffTab(ctx, p); err != nil {
			c.srv.log.Warn("closing a diff for Claude Code", "path", p, "err", err)
		}
	}
	return textResult(fmt.Sprintf("CLOSED_%d_DIFF_TABS", len(paths))), nil
}

// claudeDiagnostic is one diagnostic as Claude Code reads it (0-based
// LSP range).
type claudeDiagnostic struct {
	Message  string      `json:"message"`
	Severity string      `json:"severity"`
	Source   string      `json:"source,omitempty"`
	Code     string      `json:"code,omitempty"`
	Range    claudeRange `json:"range"`
}

type claudeFileDiagnostics struct {
	URI         string             `json:"uri"`
	Diagnostics []claudeDiagnostic `json:"diagnostics"`
}

// Claude Code waits 500 ms for a file's diagnostics (its baseline, taken
// before an edit) and 2 s for every file's (after the edit), and asks no
// more while a fetch it gave up on is unanswered (getDiagnostics in
// @anthropic-ai/claude-code 2.1.330's IDE diagnostics manager: timeouts
// of 500 and 2000 ms, "in_flight"). gemkit answers within half of each
// (Server.Diagnostics), the other half left to the answer's way and to
// a loaded machine, where Claude Code's own process may take long to
// read it (measured: 474 ms for an answer gemkit gave in 6.6 ms).
const (
	claudeFileDiagnosticsBudget = 250 * time.Millisecond
	claudeAllDiagnosticsBudget  = time.Second
)

func (c *claudeEndpoint) getDiagnostics(ctx context.Context, args map[string]any) (*callResult, error) {
	path := ""
	if uri, _ := args["uri"].(string); uri != "" {
		u, err := url.Parse(uri)
		if err != nil || (u.Scheme != "file" && u.Scheme != "") || !filepath.IsAbs(u.Path) {
			return toolError(fmt.Sprintf("getDiagnostics: uri must be a file:// URI of an absolute path, not %q", uri)), nil
		}
		path = u.Path
	}
	budget := claudeAllDiagnosticsBudget
	if path != "" {
		budget = claudeFileDiagnosticsBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	files, err := c.srv.Diagnostics(ctx, path)
	c.srv.log.Debug("claude code: getDiagnostics", "path", path, "files", len(files), "took", time.Since(start), "err", err)
	if err != nil {
		return toolError(fmt.Sprintf("getDiagnostics: %v", err)), nil
	}
	out := make([]claudeFileDiagnostics, 0, len(files))
	for _, f := range files {
		fd := claudeFileDiagnostics{URI: "file://" + f.Path, Diagnostics: make([]claudeDiagnostic, 0, len(f.Diagnostics))}
		for _, d := range f.Diagnostics {
			fd.Diagnostics = append(fd.Diagnostics, claudeDiagnostic{
				Message: d.Message, Severity: claudeSeverity(d.Severity), Source: d.Source, Code: d.Code,
				// LSP's positions, as Claude Code reads them.
				Range: claudeRange{
					Start: claudePos{Line: d.Range.Start.Line, Character: d.Range.Start.Character},
					End:   claudePos{Line: d.Range.End.Line, Character: d.Range.End.Character},
				},
			})
		}
		out = append(out, fd)
	}
	text, err := json.Marshal(out)
	if err != nil {
		return toolError(fmt.Sprintf("getDiagnostics: encode: %v", err)), nil
	}
	return textResult(string(text)), nil
}

// claudeSeverity spells a severity as VS Code's companion does.
func claudeSeverity(s ide.Severity) string {
	switch s.String() {
	case "error":
		return "Error"
	case "warning":
		return "Warning"
	case "hint":
		return "Hint"
	default:
		return "Information"
	}
}

// answerClaude gives an outcome the editor reported to the Claude Code
// openDiff waiting for it, if the diff of filePath is one; it reports
// whether it was.
func (s *Server) answerClaude(filePath string, o diffOutcome) bool {
	_, e := s.diffs.takeWaiting(filePath)
	if e == nil {
		return false
	}
	e.answer <- o
	return true
}
