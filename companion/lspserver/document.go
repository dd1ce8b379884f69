package lspserver

// The client's documents: what its notifications and position requests
// tell of the open files, the cursor and the selection.

import (
	"encoding/json"
	"slices"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
)

type docID struct {
	URI string `json:"uri"`
}

// notification handles a client notification.
func (s *Server) notification(method string, raw json.RawMessage) {
	var e *Error
	switch method {
	case "initialized":
	case "textDocument/didOpen":
		var p struct {
			TextDocument struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			} `json:"textDocument"`
		}
		if e = decode(method, raw, &p); e == nil {
			s.didOpen(p.TextDocument.URI, p.TextDocument.Text)
		}
	case "textDocument/didChange":
		var p struct {
			TextDocument   docID `json:"textDocument"`
			ContentChanges []struct {
				Range *Range `json:"range"`
				Text  string `json:"text"`
			} `json:"contentChanges"`
		}
		if e = decode(method, raw, &p); e == nil {
			s.mu.Lock()
			path := pathOf(p.TextDocument.URI)
			if s.sel.path == path {
				s.sel.path = "" // the text moved under the selection
			}
			if d := s.docs[path]; d != nil {
				d.changes++
				for _, c := range p.ContentChanges {
					if c.Range == nil {
						d.text = c.Text
						continue
					}
					a, b := offset(d.text, c.Range.Start), offset(d.text, c.Range.End)
					if b < a {
						a, b = b, a
					}
					d.text = d.text[:a] + c.Text + d.text[b:]
				}
			}
			s.mu.Unlock()
		}
	case "textDocument/didClose":
		var p struct {
			TextDocument docID `json:"textDocument"`
		}
		if e = decode(method, raw, &p); e == nil {
			s.didClose(p.TextDocument.URI)
		}
	case "textDocument/didSave":
		var p struct {
			TextDocument docID   `json:"textDocument"`
			Text         *string `json:"text"`
		}
		if e = decode(method, raw, &p); e == nil {
			s.didSave(p.TextDocument.URI, p.Text)
		}
	case "workspace/didChangeWorkspaceFolders":
		var p struct {
			Event struct {
				Added   []docID `json:"added"`
				Removed []docID `json:"removed"`
			} `json:"event"`
		}
		if e = decode(method, raw, &p); e == nil {
			s.changeFolders(p.Event.Added, p.Event.Removed)
		}
	default:
		// Notifications a server may ignore: $/cancelRequest, $/setTrace,
		// workspace/didChangeConfiguration, didChangeWatchedFiles, …
		s.log.Debug("lsp: notification ignored", "method", method)
	}
	if e != nil {
		s.log.Error("lsp: "+method+" dropped", "err", e.Message)
	}
}

// request handles a client request and returns its result.
func (s *Server) request(method string, raw json.RawMessage) (any, *Error) {
	switch method {
	case "textDocument/documentHighlight", "textDocument/hover", "textDocument/signatureHelp", "textDocument/completion":
		var p struct {
			TextDocument docID    `json:"textDocument"`
			Position     Position `json:"position"`
		}
		if e := decode(method, raw, &p); e != nil {
			return nil, e
		}
		s.cursor(p.TextDocument.URI, Range{Start: p.Position, End: p.Position})
		if method == "textDocument/documentHighlight" {
			return []any{}, nil
		}
		return nil, nil
	case "textDocument/codeAction":
		var p struct {
			TextDocument docID `json:"textDocument"`
			Range        Range `json:"range"`
		}
		if e := decode(method, raw, &p); e != nil {
			return nil, e
		}
		s.cursor(p.TextDocument.URI, p.Range)
		return s.codeActions(p.TextDocument.URI), nil
	case "workspace/executeCommand":
		var p struct {
			Command   string            `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		}
		if e := decode(method, raw, &p); e != nil {
			return nil, e
		}
		return nil, s.executeCommand(p.Command, p.Arguments)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + method}
}

// events returns the companion's Events (nil before initialize).
func (s *Server) events() companion.Events {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ev
}

func (s *Server) didOpen(uri, text string) {
	path := pathOf(uri)
	if path == "" {
		return
	}
	s.mu.Lock()
	s.docs[path] = &document{uri: uri, text: text}
	s.mu.Unlock()
	s.events().Focus(path, nil, "")
}

// cursor reports the position or selection a request names: its file
// becomes the active one.
func (s *Server) cursor(uri string, r Range) {
	path := pathOf(uri)
	if path == "" {
		return
	}
	s.mu.Lock()
	d := s.docs[path]
	sel := ""
	switch {
	case d != nil && r.Start != r.End:
		a, b := offset(d.text, r.Start), offset(d.text, r.End)
		if b < a {
			a, b = b, a
		}
		sel = d.text[a:b]
		s.sel.path, s.sel.start, s.sel.end, s.sel.text = path, r.Start, r.End, sel
	case s.sel.path == path && (s.sel.end == r.Start || s.sel.start == r.Start):
		sel = s.sel.text
		r.End = r.Start
	default:
		s.sel.path = ""
	}
	s.mu.Unlock()
	at := r.End // a selection's cursor is where it ends
	s.events().Selection(path, ide.Cursor{Line: at.Line + 1, Character: at.Character + 1}, sel)
}

func (s *Server) didClose(uri string) {
	path := pathOf(uri)
	if path == "" {
		return
	}
	s.mu.Lock()
	delete(s.docs, path)
	p := s.proposals[path]
	if p != nil {
		delete(s.proposals, path)
		p.stop()
	}
	s.mu.Unlock()
	ev := s.events()
	if p != nil {
		// The buffer with the proposal is gone: rejected, as closing a
		// diff view is.
		s.clearMarks(p)
		ev.DiffRejected(path)
	}
	ev.Close(path)
}

func (s *Server) didSave(uri string, text *string) {
	path := pathOf(uri)
	if path == "" {
		return
	}
	s.mu.Lock()
	if d := s.docs[path]; d != nil && text != nil {
		d.text = *text
		d.changes++
	}
	p := s.proposals[path]
	s.mu.Unlock()
	if p != nil {
		s.acceptSaved(p)
		return
	}
	s.events().Focus(path, nil, "")
}

// changeFolders follows workspace/didChangeWorkspaceFolders.
func (s *Server) changeFolders(added, removed []docID) {
	s.mu.Lock()
	if s.opts.FixedWorkspace {
		s.mu.Unlock()
		s.log.Info("lsp: workspace folders changed in the editor; --workspace keeps its own")
		return
	}
	gone := map[string]bool{}
	for _, r := range removed {
		gone[pathOf(r.URI)] = true
	}
	var folders []string
	for _, f := range s.folders {
		if !gone[f] {
			folders = append(folders, f)
		}
	}
	for _, a := range added {
		if p := pathOf(a.URI); p != "" && !slices.Contains(folders, p) {
			folders = append(folders, p)
		}
	}
	s.folders = folders
	s.mu.Unlock()
	if len(folders) == 0 {
		s.log.Warn("lsp: the editor closed every workspace folder; keeping the last ones for the CLI")
		return
	}
	if err := s.events().UpdateWorkspace(folders, nil); err != nil {
		s.log.Error("lsp: workspace folders not applied", "err", err)
	}
}
