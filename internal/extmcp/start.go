package extmcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// A server starts at its first use: a stdio server in gemkit's sandbox,
// exec'd only once the person's consent to its extension as it is now
// holds (checked while the sandbox is set up), or a connection to a
// remote one (remote.go). What it declares is remembered
// (completions.go), and what the clients asked of the run before it is
// given again (events.go).

// stoppedWhileStarting says why a start ended before its time was up:
// what waited for it went (a client that closed the connection or
// cancelled its request, gemkit mcp ending), not the server.
const stoppedWhileStarting = "what waited for it stopped waiting (the client went or cancelled its request, or gemkit mcp ended)"

// stoppedForGood says why a request or a listing ended before its time
// was up: gemkit stopped the server for good meanwhile.
const stoppedForGood = "gemkit stopped the server meanwhile (gemkit mcp is ending, or the server's extension changed or went)"

// ErrStopped is what the error of a start, a listing or a request cut
// short so wraps (errors.Is): no failure of the server's, which a log
// need not warn of.
var ErrStopped = errors.New(stoppedWhileStarting)

// stopped is such an error, in its own words.
type stopped struct{ msg string }

func (e *stopped) Error() string { return e.msg }
func (e *stopped) Unwrap() error { return ErrStopped }

// start starts the server in the sandbox and connects to it, bounded by
// its timeout.
func (s *server) start(ctx context.Context) (*running, error) {
	r, err := s.startOrConnect(ctx)
	if err != nil {
		return nil, err
	}
	r.caps = r.client.Capabilities()
	s.remember(r.caps)
	s.resume(ctx, r)
	return r, nil
}

// startOrConnect starts a stdio server, or connects to a remote one.
// The caller holds s.mu.
func (s *server) startOrConnect(ctx context.Context) (*running, error) {
	// The consent check begun for an answer from the kept catalog, else
	// one of this start's own.
	v := s.cache.takeConsent()
	if v == nil {
		v = s.check()
	}
	if s.spec.Remote() {
		if err := v.wait(ctx); err != nil {
			return nil, err
		}
		return s.connect(ctx)
	}
	// From gemkit's copy of the extension as agreed to, nothing is
	// checked. Without one, consent is checked while the sandbox is set
	// up (the Gate of its command): it hashes the extension's folder,
	// which for a server shipped with its node_modules takes as long as
	// the set-up. The program runs only once it has passed.
	r, err := s.startStdio(ctx, v)
	if err != nil && v.copy != "" && errors.Is(err, sandbox.ErrNoMountNamespace) {
		// The copy cannot be shown in the folder's place here: the
		// folder is checked as it is, and run.
		v = s.checkFolder()
		r, err = s.startStdio(ctx, v)
	}
	if err == nil && v.copy == "" && s.spec.Keep != nil && s.keepOnce.CompareAndSwap(false, true) {
		// Let through by the check of its folder: the copy is made for
		// the starts after this one, now that this one is over.
		go func() {
			if err := s.spec.Keep(); err != nil {
				s.m.log.Debug("keeping gemkit's copy of the extension as agreed to", "extension", s.spec.Extension, "err", err)
			}
		}()
	}
	if err != nil {
		// Not agreed to is what the person must act on first, whatever
		// else failed; what no longer waits for the start does not wait
		// for the check either.
		if aerr := v.wait(ctx); aerr != nil && ctx.Err() == nil {
			return nil, aerr
		}
	}
	return r, err
}

// allowed asks the spec's Allowed, in words naming the server.
func (s *server) allowed() error {
	if s.spec.Allowed == nil {
		return nil
	}
	if err := s.spec.Allowed(); err != nil {
		return fmt.Errorf("%s is not started: %w", s.who(), err)
	}
	return nil
}

// startStdio starts a stdio server in the sandbox, exec'd once the
// consent check v passes, and connects to it: from gemkit's copy of the
// extension as agreed to, when v is that copy.
func (s *server) startStdio(ctx context.Context, v *verdict) (*running, error) {
	cfg := s.m.cfg
	if s.spec.Unpinned != "" {
		return nil, fmt.Errorf("%s is not started: %s", s.who(), s.spec.Unpinned)
	}
	if cfg.Launcher == nil {
		return nil, fmt.Errorf("%s is not started: gemkit has no sandbox to start it in", s.who())
	}
	root := cfg.DataRoot
	if root == "" {
		var err error
		if root, err = DataRoot(envmap.Of(cfg.Environ)); err != nil {
			return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
		}
	}
	list := cfg.ExtensionFolders
	if list == nil {
		list = func() ([]string, error) { return extension.EnvFolders(envmap.Of(cfg.Environ)) }
	}
	folders, err := list()
	if err != nil {
		return nil, fmt.Errorf("%s is not started: listing the extensions, whose folders it must find read-only: %w", s.who(), err)
	}
	pr, err := buildProfile(s.spec, cfg.Workspace, root, cfg.Environ, folders, v.copy)
	if err != nil {
		return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
	}
	if used, err := usage(pr.Data); err == nil {
		if err := s.dataLimit().full(s.who(), pr.Data, used); err != nil {
			return nil, err
		}
	}
	s.warnProfile(pr)
	tmp, err := os.MkdirTemp("", "gemkit-mcp-server-")
	if err != nil {
		return nil, err
	}
	s.stderr.Reset()
	cmd := &sandbox.Command{
		Policy: pr.Policy(cfg.Workspace, tmp),
		Path:   pr.Path, Args: pr.Args, Dir: cmp.Or(pr.Dir, cfg.Workspace), Stderr: s.stderr,
		Env:    append(pr.Env, "TMPDIR="+tmp),
		OnDeny: s.denied,
	}
	if v.copy != "" {
		cmd.Policy.Replaced = []sandbox.Handed{{Source: v.copy, Target: s.spec.Dir}}
	}
	if v.copy == "" || s.spec.PinnedTree != nil {
		cmd.Gate = v.wait
	}
	waiting := ctx
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	srv, err := cfg.Launcher.StartServer(ctx, cmd)
	if err != nil {
		os.RemoveAll(tmp)
		var ue *sandbox.UnenforceableError
		switch {
		case waiting.Err() != nil:
			return nil, &stopped{fmt.Sprintf("%s was not started: %s", s.who(), stoppedWhileStarting)}
		case errors.Is(err, sandbox.ErrUnsupported):
			return nil, fmt.Errorf("%s is not started: gemkit runs extensions' MCP servers only inside its sandbox, which it has on Linux only so far", s.who())
		case errors.As(err, &ue):
			return nil, fmt.Errorf("%s is not started: gemkit runs it only inside its sandbox, and this machine cannot provide it (%s)", s.who(), strings.Join(ue.Reasons, "; "))
		}
		return nil, fmt.Errorf("%s could not be started in gemkit's sandbox: %w", s.who(), err)
	}
	r := &running{kill: srv.Kill, wait: srv.Wait, denied: srv.Denied, tmp: tmp, data: pr.Data, readOnly: pr.ReadOnly, exited: make(chan struct{}), done: make(chan struct{})}
	go s.watch(r)
	go s.watchData(r)
	client, err := mcpclient.Stdio(ctx, srv.Stdout, srv.Stdin, s.clientOptions(ctx, r))
	if err != nil {
		var why string
		switch {
		case waiting.Err() != nil:
			why = "did not answer MCP's initialize before " + stoppedWhileStarting
		case ctx.Err() != nil:
			why = "did not answer MCP's initialize within " + s.startTimeout().String()
		case notJSONRPC(err):
			why = "printed something other than MCP's JSON-RPC on its stdout (" + oneLine(err.Error()) + ")"
		case r.exitedSoon():
			why = "exited at once (" + r.waitErr.Error() + ")"
		default:
			why = "did not start as an MCP server (" + oneLine(err.Error()) + ")"
		}
		r.killed.Store(true)
		r.kill()
		// watch records the exit once the caller lets go of s.mu.
		<-r.exited
		if waiting.Err() != nil {
			return nil, &stopped{s.failure(why).Error()}
		}
		return nil, s.failure(why)
	}
	r.client = client
	s.m.log.Debug("MCP server started", "extension", s.spec.Extension, "server", s.spec.Server, "pid", srv.Pid())
	return r, nil
}

// notJSONRPC reports whether err, a client's failure or the reason its
// connection ended, is a line of the server's stdout that is not
// JSON-RPC: not JSON at all, or JSON cut short.
func notJSONRPC(err error) bool {
	var syntax *json.SyntaxError
	return err != nil && (errors.As(err, &syntax) || strings.Contains(err.Error(), "invalid character"))
}

// clientOptions are the options of r's client, started under ctx: its
// progress routed to the calls that asked, its other notifications to
// the Manager's listener (catalog.go), its roots the workspace, and the
// elicitation modes of the client it starts for, whose questions go to
// the calls' clients (elicit.go).
func (s *server) clientOptions(ctx context.Context, r *running) mcpclient.Options {
	modes := s.m.modesFor(ctx)
	return mcpclient.Options{Name: "gemkit", Version: s.m.cfg.Version, Roots: s.roots(), Ask: s.ask, AskForm: modes.Form, AskURL: modes.URL,
		Progress: func(token any, progress, total float64, message string) {
			if t, ok := token.(string); ok {
				if f, ok := r.progress.Load(t); ok {
					f.(Progress)(progress, total, message)
				}
			}
		},
		Events: s.event,
	}
}
