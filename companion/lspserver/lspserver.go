// Package lspserver is the language-server front-end of `gemkit ide serve
// --editor lsp`: any editor that speaks the [Language Server Protocol]
// (3.17, Content-Length framing on stdin/stdout) starts gemkit as a
// language server and becomes an IDE for Gemini CLI and Claude Code, with
// no plugin.
//
// A [Server] is the companion's
// [github.com/gemkit/gemkit/companion.Editor], beside
// [github.com/gemkit/gemkit/companion/editorproto.Conn]: it learns the workspace
// from [initialize], the open files and their unsaved text from the
// [document notifications], the active file and cursor from the requests
// that name a position ([textDocument/documentHighlight], codeAction, …) and
// a selection from a code action's range. It shows a proposed change by
// applying it to the file's buffer with [workspace/applyEdit], marks it with
// diagnostics and offers "Accept proposal"/"Reject proposal" code actions
// ([CommandAccept], [CommandReject]), since the oldest clients in use
// (Neovim 0.7, eglot 1.9) have no diff view. [Server.Serve] runs a
// companion's whole life with the client; [Server.Run] serves the client
// with a companion of the caller's. [docs/lsp.md] describes each editor's
// set-up.
//
// [Language Server Protocol]: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/
// [initialize]: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#initialize
// [document notifications]: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_synchronization
// [textDocument/documentHighlight]: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_documentHighlight
// [workspace/applyEdit]: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#workspace_applyEdit
// [docs/lsp.md]: https://github.com/gemkit/gemkit/blob/main/docs/lsp.md
package lspserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Defaults of [Options].
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

// Options tunes a [Server]; the zero value is usable.
type Options struct {
	// Logger receives protocol errors; it must not write to stdout.
	Logger *slog.Logger
	// RequestTimeout bounds each request to the client (applyEdit: eglot
	// asks the person before it answers); default [DefaultRequestTimeout].
	RequestTimeout time.Duration
	// MaxMessage is the largest message body read; default
	// [DefaultMaxMessage].
	MaxMessage int
	// Settle is [DefaultSettle] when zero.
	Settle time.Duration
	// SaveHold is how long the file of a proposal accepted by saving
	// keeps its earlier text for the agent to read and write (saved.go);
	// [DefaultSaveHold] when zero.
	SaveHold time.Duration
	// FixedWorkspace keeps the workspace given at start (--workspace):
	// the client's workspace folders are then not followed.
	FixedWorkspace bool
	// Version is reported as serverInfo.version.
	Version string
	// Group, when set, returns the socket of the group this client's
	// server belongs to ([GroupPath]), "" for none: the servers of one
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
// [companion.Events] receive the client's reports from then on. An error is
// sent back as initialize's error. [Server.Serve] has its own; [Server.Run]
// takes one.
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
	// groupLn is the group's socket while s leads it, closed (and so
	// removed) before Run returns: the process may exit right after, before
	// lead's own goroutine would close it. groupDone is set then.
	groupLn   net.Listener
	groupDone bool
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
	// changes counts the changes of text the client reported.
	changes int
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

// ErrNoShutdown is returned by [Server.Run] when the client sent exit without
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
	defer s.closeGroup()
	defer s.cancel()
	// When ctx ends (SIGTERM) the client still runs: it is read until
	// the proposals in its buffers are withdrawn, which takes its answers.
	reading, stopReading := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReading()
	defer context.AfterFunc(ctx, func() {
		s.withdraw()
		stopReading()
	})()
	return s.serve(reading, start)
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
		// test) may take the server for done. The client may keep its
		// buffers (Neovim's :LspStop, eglot-shutdown).
		s.withdraw()
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
