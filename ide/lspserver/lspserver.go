// Package lspserver is the language-server front-end of `gemkit ide serve
// --editor lsp`: any editor that speaks the Language Server Protocol (3.17,
// Content-Length framing on stdin/stdout) starts gemkit as a language
// server and becomes an IDE for Gemini CLI and Claude Code, with no plugin.
//
// A Server is the companion's Editor, beside ide/editorproto: it learns the
// workspace from initialize, the open files and their unsaved text from
// the document notifications, the active file and cursor from the requests
// that name a position (documentHighlight, codeAction, …) and a selection
// from a code action's range. It shows a proposed change by applying it to
// the file's buffer with workspace/applyEdit, marks it with diagnostics and
// offers "Accept proposal"/"Reject proposal" code actions, since the oldest
// clients in use (Neovim 0.7, eglot 1.9) have no diff view. docs/lsp.md
// describes each editor's set-up.
package lspserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/companion"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Defaults of Options.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxMessage     = 4 * ide.MaxRequestBody
	// DefaultSettle is how long an accept given in a prompt or a command
	// waits for the person's last edits: Neovim holds didChange back
	// 150 ms and sends it after a prompt's answer, eglot sends it once
	// typing has stopped for 0.5 s, not before a command.
	DefaultSettle = 600 * time.Millisecond
)

// Command names of the code actions gemkit offers on a proposed change.
const (
	CommandAccept = "gemkit.acceptProposal"
	CommandReject = "gemkit.rejectProposal"
)

// Options tunes a Server; the zero value is usable.
type Options struct {
	// Logger receives protocol errors; it must not write to stdout.
	Logger *slog.Logger
	// RequestTimeout bounds each request to the client (applyEdit: eglot
	// asks the person before it answers); default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxMessage is the largest message body read; default
	// DefaultMaxMessage.
	MaxMessage int
	// Settle is DefaultSettle when zero.
	Settle time.Duration
	// SaveHold is how long the file of a proposal accepted by saving
	// keeps its earlier text for the agent to read and write (saved.go);
	// DefaultSaveHold when zero.
	SaveHold time.Duration
	// FixedWorkspace keeps the workspace given at start (--workspace):
	// the client's workspace folders are then not followed.
	FixedWorkspace bool
	// Version is reported as serverInfo.version.
	Version string
	// Group, when set, returns the socket of the group this client's
	// server belongs to (GroupPath), "" for none: the servers of one
	// editor and workspace then share one companion (group.go). Serve
	// sets it when it is nil.
	Group func(Init) string
	// Shutdown, when set, is called on the client's shutdown request
	// before it is answered: the CLI stops the companion there, removing
	// its discovery and lock files. Some clients kill the server as soon
	// as they have sent exit (lsp-mode's kill-process after its exit
	// notification), so cleaning up only on exit can lose the race;
	// they do wait for the answer to shutdown. Serve stops its companion
	// there, then calls the one given.
	Shutdown func()
}

// Init is what initialize tells about the client.
type Init struct {
	// ProcessID is the client's pid (processId), 0 when it sent none.
	ProcessID int
	// Workspace holds the paths of workspaceFolders, else of rootUri, else
	// rootPath; empty when the client opened no folder.
	Workspace []string
	// ClientName is clientInfo.name, "" when not sent (eglot 1.9).
	ClientName string
}

// StartFunc starts the companion once the client has said who it is; its
// Events receive the client's reports from then on. An error is sent back
// as initialize's error. Serve has its own; Run takes one.
type StartFunc func(Init) (companion.Events, error)

// Server is one language client on a pair of streams.
type Server struct {
	log  *slog.Logger
	opts Options

	// conn carries the messages to and from the client (rpc.go).
	conn *jsonrpc.Conn

	// ctx ends when Run returns; asynchronous work (prompts, restores)
	// stops with it.
	ctx    context.Context
	cancel context.CancelFunc
	// holds counts the files of proposals accepted by saving that wait
	// for the agent's write (saved.go); Run waits for them to settle.
	holds sync.WaitGroup

	// leader is the connection to the group's leading server while s
	// follows it (group.go); fmu orders the writes to it.
	leader net.Conn
	fmu    sync.Mutex

	mu    sync.Mutex
	phase phase
	// stopped is set once the server stops holding saved files for the
	// agent (shutdown, or Run returning): release closes released.
	stopped   bool
	released  chan struct{}
	ev        companion.Events
	caps      clientCaps
	folders   []string
	docs      map[string]*document // by path
	proposals map[string]*proposal // by path
	// opening holds, by path, the OpenDiff waiting for its applyEdit;
	// CloseDiff closes the channel to end the wait.
	opening map[string]chan struct{}
	// sel is the last selection a range told: a position request at its
	// end or its start keeps it, since the cursor has not moved (eglot
	// asks for the highlights at point, the region's end, right after a
	// code action on the region; Vim leaves the cursor at the start of a
	// Visual selection once ":" is typed on it, where ALE's hover asks).
	sel struct {
		path       string
		start, end Position
		text       string
	}
}

type phase int

const (
	phaseNew phase = iota
	phaseRunning
	phaseShutdown
)

// document is a file the client has open, with its current text.
type document struct {
	uri  string
	text string
}

var _ companion.Editor = (*Server)(nil)

// New makes a Server reading the client's messages from r and writing
// gemkit's to w. Call Run to serve.
func New(r io.Reader, w io.Writer, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.SaveHold <= 0 {
		o.SaveHold = DefaultSaveHold
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		log: o.Logger, opts: o,
		conn:      newConn(r, w, o),
		ctx:       ctx,
		cancel:    cancel,
		docs:      map[string]*document{},
		proposals: map[string]*proposal{},
		opening:   map[string]chan struct{}{},
		released:  make(chan struct{}),
	}
}

// ErrNoShutdown is returned by Run when the client sent exit without
// shutdown first (LSP: the server then exits with code 1).
var ErrNoShutdown = errors.New("the language client sent exit without shutdown")

// Run serves the client until it sends exit, closes its stream, or ctx
// ends. start is called on initialize, from Run's reading goroutine. Bad
// input is answered with a JSON-RPC error (or logged, for a notification)
// and reading goes on.
func (s *Server) Run(ctx context.Context, start StartFunc) error {
	// After cancel: a saved text that nobody wrote goes back to disk
	// before Run returns.
	defer s.releaseHolds()
	defer s.cancel()
	return s.serve(ctx, start)
}

// dispatch handles one call: a request when id is not nil.
func (s *Server) dispatch(id json.RawMessage, method string, params json.RawMessage, start StartFunc) error {
	s.mu.Lock()
	p := s.phase
	s.mu.Unlock()
	switch {
	case method == "exit":
		return errExit
	case method == "initialize":
		if id == nil {
			s.log.Error("lsp: initialize sent as a notification; it must be a request")
			return nil
		}
		if p != phaseNew {
			s.fail(id, method, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: initialize was already received"})
			return nil
		}
		s.initialize(id, params, start)
		return nil
	case p == phaseNew:
		if id != nil {
			s.fail(id, method, &Error{Code: CodeServerNotInitialized, Message: "Server not initialized: send initialize first (got " + method + ")"})
		} else {
			s.log.Error("lsp: notification before initialize dropped", "method", method)
		}
		return nil
	case p == phaseShutdown && id != nil:
		s.fail(id, method, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: the server is shut down; only exit is expected (got " + method + ")"})
		return nil
	}
	if id == nil {
		s.notification(method, params)
		s.forward(nil, method, params)
		return nil
	}
	if method == "shutdown" {
		s.shutdown(id)
		return nil
	}
	if s.forward(id, method, params) {
		return nil // the leader answers
	}
	result, rpcErr := s.request(method, params)
	if rpcErr != nil {
		s.fail(id, method, rpcErr)
		return nil
	}
	s.reply(id, result, nil)
	return nil
}

// shutdown answers the client's shutdown request once Options.Shutdown
// has run. The hook stops the companion, which may wait for the client's
// answer to a request under way (the applyEdit of a proposal opening as
// the editor quits): it runs on a goroutine of its own so that the
// reading of the client's messages goes on meanwhile.
//
// A saved text that waits for the agent's write goes back to disk first,
// if nobody wrote it: lsp-mode kills the server right after exit.
func (s *Server) shutdown(id json.RawMessage) {
	s.mu.Lock()
	s.phase = phaseShutdown
	s.mu.Unlock()
	go func() {
		// First: once the companion's files are gone, the editor (and a
		// test) may take the server for done.
		s.releaseHolds()
		if s.opts.Shutdown != nil {
			s.opts.Shutdown()
		}
		s.reply(id, nil, nil)
	}()
}

// groupPath is the socket of s's group, "" when it has none.
func (s *Server) groupPath(in Init) string {
	if s.opts.Group == nil {
		return ""
	}
	return s.opts.Group(in)
}

// fail answers a request with an error and logs it.
func (s *Server) fail(id json.RawMessage, method string, e *Error) {
	s.log.Error("lsp: "+method+" failed", "err", e.Message)
	s.reply(id, nil, e)
}

// clientCaps is what gemkit uses of the client's capabilities.
type clientCaps struct {
	applyEdit    bool
	showDocument bool
	showMessage  bool
}

type initializeParams struct {
	ProcessID        *int    `json:"processId"`
	RootURI          *string `json:"rootUri"`
	RootPath         *string `json:"rootPath"`
	WorkspaceFolders *[]struct {
		URI string `json:"uri"`
	} `json:"workspaceFolders"`
	ClientInfo *struct {
		Name string `json:"name"`
	} `json:"clientInfo"`
	Capabilities struct {
		Workspace struct {
			ApplyEdit bool `json:"applyEdit"`
		} `json:"workspace"`
		Window struct {
			ShowDocument *struct {
				Support bool `json:"support"`
			} `json:"showDocument"`
			ShowMessage *json.RawMessage `json:"showMessage"`
		} `json:"window"`
	} `json:"capabilities"`
}

func (s *Server) initialize(id json.RawMessage, raw json.RawMessage, start StartFunc) {
	var p initializeParams
	if e := decode("initialize", raw, &p); e != nil {
		s.fail(id, "initialize", e)
		return
	}
	in := Init{}
	if p.ProcessID != nil && *p.ProcessID > 0 {
		in.ProcessID = *p.ProcessID
	}
	if p.ClientInfo != nil {
		in.ClientName = p.ClientInfo.Name
	}
	switch {
	case p.WorkspaceFolders != nil && len(*p.WorkspaceFolders) > 0:
		for _, f := range *p.WorkspaceFolders {
			if path := pathOf(f.URI); path != "" {
				in.Workspace = append(in.Workspace, path)
			} else {
				s.log.Warn("lsp: workspace folder that is not a file: URI ignored", "uri", f.URI)
			}
		}
	case p.RootURI != nil && *p.RootURI != "":
		if path := pathOf(*p.RootURI); path != "" {
			in.Workspace = []string{path}
		}
	case p.RootPath != nil && *p.RootPath != "":
		in.Workspace = []string{*p.RootPath}
	}
	caps := clientCaps{
		applyEdit:    p.Capabilities.Workspace.ApplyEdit,
		showDocument: p.Capabilities.Window.ShowDocument != nil && p.Capabilities.Window.ShowDocument.Support,
		showMessage:  p.Capabilities.Window.ShowMessage != nil,
	}
	// Before the companion starts: a CLI that connects at once asks
	// ShowsDiffs for its tool list.
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
	var ev companion.Events
	var lead net.Listener
	var err error
	if path := s.groupPath(in); path != "" {
		ev, lead, err = s.join(path, in, start)
	} else {
		ev, err = start(in)
	}
	if err != nil {
		s.fail(id, "initialize", &Error{Code: CodeInternalError, Message: "gemkit could not start its IDE companion: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.phase = phaseRunning
	s.ev = ev
	s.folders = in.Workspace
	s.mu.Unlock()
	if lead != nil {
		go s.lead(lead) // followers' messages need s.ev
	}
	if !caps.applyEdit {
		s.log.Warn("lsp: the client cannot apply workspace edits; diffs cannot be shown in it")
	}
	s.reply(id, initializeResult(s.opts.Version, wantsHover(in.ClientName)), nil)
}

// wantsHover reports whether the client only reports the resting cursor
// when the server has hover: eglot sends documentHighlight only from its
// hover eldoc function, behind hoverProvider (eglot 1.9, eglot.el,
// eglot-hover-eldoc-function), and names itself "Eglot" in clientInfo
// from 1.10 on (none before). Other clients (Neovim: "No information
// available" for an empty hover, next to the real server's) are better
// without it.
func wantsHover(clientName string) bool {
	return clientName == "" || strings.EqualFold(clientName, "eglot")
}

// initializeResult advertises only what tells gemkit the person's context
// (documentHighlight: clients that highlight on cursor idle report the
// cursor; hover for eglot) and what answers a proposal (code actions and
// their commands).
func initializeResult(version string, hover bool) any {
	caps := map[string]any{
		"textDocumentSync": map[string]any{
			"openClose": true,
			"change":    1, // full text: no drift between client and server
			"save":      map[string]any{"includeText": true},
		},
		"documentHighlightProvider": true,
		"codeActionProvider":        true,
		"executeCommandProvider": map[string]any{
			"commands": []string{CommandAccept, CommandReject},
		},
		"workspace": map[string]any{
			"workspaceFolders": map[string]any{"supported": true, "changeNotifications": true},
		},
	}
	if hover {
		caps["hoverProvider"] = true
	}
	return map[string]any{"capabilities": caps, "serverInfo": map[string]any{"name": "gemkit", "version": version}}
}

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
