package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
)

// DefaultServerMemoryBytes is the memory cap of a server (StartServer)
// when its policy sets none: a language server indexing a large
// workspace holds more than a tool's run does.
const DefaultServerMemoryBytes = 4 << 30

// Server is a long-lived sandboxed process that speaks on its standard
// input and output (a language server, an extension's stdio MCP server).
// Unlike a tool's run it has no time limit: it lives until the caller
// stops it (Kill) or gemkit's process goes, whichever comes first (the
// sandbox child is started with a parent-death signal and leads its own
// PID namespace, so everything it started goes with it).
type Server struct {
	*Process
	// Stdin writes to the server; Stdout reads what it answers. Closing
	// Stdin is the server's end of input.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	stop     context.CancelFunc
	waitOnce sync.Once
	waitErr  error
}

// StartServer starts c as a long-lived server under the sandbox: c's
// Stdin and Stdout must be nil (the Server's pipes take their place);
// c.Stderr receives what it logs. ctx bounds only the start: once
// StartServer returns, the server runs until Kill, or until gemkit goes.
// Everything else is as Start: the policy's scopes, caches, closed
// folders and hosts, refused where the kernel cannot enforce them.
func (l *Launcher) StartServer(ctx context.Context, c *Command) (*Server, error) {
	if c.Stdin != nil || c.Stdout != nil {
		return nil, errors.New("sandbox: a server's stdin and stdout are its own pipes; leave Command.Stdin and Stdout nil")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cc := *c
	cc.Stdin, cc.Stdout = inR, outW
	if cc.Policy.MemoryBytes == 0 {
		cc.Policy.MemoryBytes = DefaultServerMemoryBytes
	}
	// The server's life is its own context's, not the caller's: the
	// caller's ends only a start still under way.
	life, stop := context.WithCancel(context.Background())
	unhook := context.AfterFunc(ctx, stop)
	p, err := l.Start(life, &cc)
	unhook()
	// The child holds its own copies of its ends.
	inR.Close()
	outW.Close()
	if err != nil {
		stop()
		inW.Close()
		outR.Close()
		return nil, err
	}
	if ctx.Err() != nil {
		stop()
		_ = p.Wait()
		inW.Close()
		outR.Close()
		return nil, ctx.Err()
	}
	return &Server{Process: p, Stdin: inW, Stdout: outR, stop: stop}, nil
}

// Kill kills the server and everything it started.
func (s *Server) Kill() {
	s.stop()
	s.Process.Kill()
}

// Wait waits for the server to exit, then closes its pipes and gives back
// what the run held (its cgroup, its proxy). It may be called more than
// once; each call returns the same error.
func (s *Server) Wait() error {
	s.waitOnce.Do(func() {
		s.waitErr = s.Process.Wait()
		s.stop()
		s.Stdin.Close()
		s.Stdout.Close()
	})
	return s.waitErr
}
