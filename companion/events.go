package companion

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gemkit/gemkit/ide"
)

var _ Events = (*Server)(nil)

// diffRegistry tracks the diffs opened through openDiff, so that an
// outcome the editor reports is forwarded once, and never for a diff that
// closeDiff closed (the CLI resolves those itself).
type diffRegistry struct {
	mu    sync.Mutex
	open  map[string]*diffEntry
	count uint64
}

type diffEntry struct {
	id      uint64
	closing bool
	// session is the /mcp session that opened the diff ("" when opened
	// another way), told when another agent's diff replaces it.
	session string
	// answer, when not nil, takes the outcome instead of the Gemini-side
	// clients: the diff was opened by Claude Code, whose openDiff waits
	// for it (see claude.go).
	answer chan diffOutcome
}

func newDiffRegistry() *diffRegistry { return &diffRegistry{open: map[string]*diffEntry{}} }

// add registers a diff of path that the /mcp session opened ("" for
// none) and returns its entry, with the diff it replaces (nil when none
// was open for path). When answer is not nil the outcome goes to it; a
// diff replaced that was waiting so is answered as replaced.
func (d *diffRegistry) add(path, session string, answer chan diffOutcome) (e, replaced *diffEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.count++
	e = &diffEntry{id: d.count, answer: answer, session: session}
	old := d.open[path]
	if old != nil && old.answer != nil {
		old.answer <- diffOutcome{replaced: true}
	}
	d.open[path] = e
	return e, old
}

// geminiWaiting returns, sorted, the paths of the diffs that a Gemini-side
// client opened and that still wait for the person's answer.
func (d *diffRegistry) geminiWaiting() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ps []string
	for p, e := range d.open {
		if e.answer == nil && !e.closing {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// drop removes e if it is still the diff of path.
func (d *diffRegistry) drop(path string, e *diffEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open[path] == e {
		delete(d.open, path)
	}
}

// holds reports whether e is still the diff of path: no answer has taken
// it out.
func (d *diffRegistry) holds(path string, e *diffEntry) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.open[path] == e
}

// startClosing marks the diff of path as being closed by closeDiff, so an
// outcome the editor reports meanwhile is not forwarded. It returns the
// entry (nil when none is open).
func (d *diffRegistry) startClosing(path string) *diffEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.open[path]
	if e != nil {
		e.closing = true
		if e.answer != nil {
			// A Gemini client closes Claude Code's diff of the same
			// file: Claude Code learns its tab closed.
			e.answer <- diffOutcome{closed: true}
			e.answer = nil
		}
	}
	return e
}

// resolve removes the diff of path and returns the path exactly as the
// client spelled it in openDiff (the client matches outcomes on that
// string), and whether the outcome should go to the clients. An editor
// that cleaned the path still finds its diff.
func (d *diffRegistry) resolve(path string) (string, bool) {
	key, e := d.take(path)
	if e == nil {
		return key, false
	}
	return key, !e.closing
}

// take removes the diff of path and returns it with the path as the client
// spelled it; nil when none is open.
func (d *diffRegistry) take(path string) (string, *diffEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := path
	e, ok := d.open[key]
	if !ok {
		clean := filepath.Clean(path)
		for k, v := range d.open {
			if filepath.Clean(k) == clean {
				key, e, ok = k, v, true
				break
			}
		}
	}
	if !ok {
		return path, nil
	}
	delete(d.open, key)
	return key, e
}

// registerDiff registers a diff of path (diffRegistry.add). When it
// replaces another agent's diff of the same path, that agent's /mcp
// session is told its proposal was rejected (rejectReplaced) before any
// outcome of this one, which goes to every session as outcomes do: the
// replaced agent no longer waits on the path and ignores it.
func (s *Server) registerDiff(path, session string, answer chan diffOutcome) *diffEntry {
	e, old := s.diffs.add(path, session, answer)
	if old != nil && old.session != "" && old.session != session && !old.closing {
		s.rejectReplaced(old.session, path)
	}
	return e
}

// Focus implements [Events].
func (s *Server) Focus(path string, cursor *ide.Cursor, selectedText string) {
	if !s.state.focus(path, cursor, selectedText) {
		s.log.Debug("focus ignored: not a file on disk", "path", path)
	}
}

// Selection implements [Events].
func (s *Server) Selection(path string, cursor ide.Cursor, selectedText string) {
	if !s.state.selection(path, cursor, selectedText) {
		s.log.Debug("selection ignored: not a file on disk", "path", path)
	}
}

// Close implements [Events].
func (s *Server) Close(path string) { s.state.remove(path) }

// Delete implements [Events].
func (s *Server) Delete(path string) { s.state.remove(path) }

// Rename implements [Events].
func (s *Server) Rename(oldPath, newPath string) { s.state.rename(oldPath, newPath) }

// InvalidWorkspaceError is what UpdateWorkspace returns for folders that
// cannot be a workspace (relative, missing, not a directory): the
// caller's mistake, as opposed to a failure to rewrite the discovery file
// (a full or read-only disk), which is the server's.
type InvalidWorkspaceError struct{ Err error }

func (e *InvalidWorkspaceError) Error() string { return e.Err.Error() }
func (e *InvalidWorkspaceError) Unwrap() error { return e.Err }

// UpdateWorkspace implements [Events]: it replaces the workspace folders
// (when paths is not nil) and the trust (when trusted is not nil), rewrites
// the discovery file and sends the new trust to clients.
func (s *Server) UpdateWorkspace(paths []string, trusted *bool) error {
	var ws []string
	if paths != nil {
		var err error
		if ws, err = checkWorkspace(paths); err != nil {
			return &InvalidWorkspaceError{Err: err}
		}
	}
	s.wsMu.Lock()
	if paths != nil {
		s.workspace = ws
	}
	trustChanged := false
	if trusted != nil {
		v := *trusted
		trustChanged = s.trusted == nil || *s.trusted != v
		s.trusted = &v
	}
	s.wsMu.Unlock()
	select {
	case <-s.ready:
		if err := s.writeDiscovery(); err != nil {
			return fmt.Errorf("rewrite discovery file: %w", err)
		}
		if s.claude != nil {
			if err := s.claude.writeLock(); err != nil {
				return fmt.Errorf("rewrite claude code lock file: %w", err)
			}
		}
	default:
		// Serve has not written the file yet; it will write the new state.
	}
	if trustChanged {
		s.state.touch()
	}
	return nil
}

// DiffAccepted implements [Events].
func (s *Server) DiffAccepted(filePath, content string) {
	if s.answerClaude(filePath, diffOutcome{accepted: true, content: content}) {
		return
	}
	filePath, ok := s.diffs.resolve(filePath)
	if !ok {
		s.log.Debug("diff accepted for no open diff; not forwarded", "path", filePath)
		return
	}
	s.notifyGemini(ide.MethodDiffAccepted, ide.DiffAccepted{FilePath: filePath, Content: content}, "the acceptance of its diff of "+filePath)
}

// DiffRejected implements [Events].
func (s *Server) DiffRejected(filePath string) {
	if s.answerClaude(filePath, diffOutcome{}) {
		return
	}
	filePath, ok := s.diffs.resolve(filePath)
	if !ok {
		s.log.Debug("diff rejected for no open diff; not forwarded", "path", filePath)
		return
	}
	s.notifyGemini(ide.MethodDiffRejected, ide.DiffRejected{FilePath: filePath}, "the rejection of its diff of "+filePath)
}
