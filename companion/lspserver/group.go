package lspserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/proc"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Editors start one language server per language or per root (Helix, one
// per language-server entry and root; eglot, one per project and major
// mode), yet the CLI must see one IDE: one discovery file, one context,
// each diff shown once. So the servers of one editor process and workspace
// form a group around a Unix socket: the first to bind it leads (it runs
// the companion and shows diffs through its own client); the others
// follow, passing their client's document notifications and requests to
// the leader over the socket in the same framing, and answering their
// client with the leader's replies. When the leader goes, a follower takes
// its place and starts a companion of its own.

// GroupPath returns the socket of the group of the editor pid and
// workspace folders, in dir (the discovery directory: private to the
// user), or "" when the path would be too long for a Unix socket.
func GroupPath(dir string, pid int, workspace []string) string {
	ws := slices.Clone(workspace)
	slices.Sort(ws)
	sum := sha256.Sum256([]byte(strings.Join(ws, "\x00")))
	p := filepath.Join(dir, "gemkit-lsp-"+strconv.Itoa(pid)+"-"+hex.EncodeToString(sum[:6])+".sock")
	if len(p) > 100 { // sun_path holds 104 bytes on macOS, 108 on Linux
		return ""
	}
	return p
}

// noEvents is a follower's Events: the leader's companion gets the
// reports, forwarded.
type noEvents struct{}

func (noEvents) Focus(string, *ide.Cursor, string)     {}
func (noEvents) Selection(string, ide.Cursor, string)  {}
func (noEvents) Close(string)                          {}
func (noEvents) Rename(string, string)                 {}
func (noEvents) Delete(string)                         {}
func (noEvents) UpdateWorkspace([]string, *bool) error { return nil }
func (noEvents) DiffAccepted(string, string)           {}
func (noEvents) DiffRejected(string)                   {}

// join makes s the leader of the group at path (listening, then starting
// the companion) or a follower of its leader. It returns the Events for s
// and, when s leads, the listener to pass to lead once s uses them:
// followers that connect meanwhile wait in the listen queue.
func (s *Server) join(path string, in Init, start StartFunc) (companion.Events, net.Listener, error) {
	for range 3 {
		ln, err := listenGroup(path)
		if err == nil {
			ev, err := start(in)
			if err != nil {
				ln.Close()
				return nil, nil, err
			}
			s.log.Debug("lsp: leading the group", "socket", path)
			return ev, ln, nil
		}
		conn, derr := dialGroup(path)
		if derr == nil {
			if err := proc.SameUser(conn); err != nil {
				// Another user's socket at this user's group path: it
				// would get the text of every file the editor opens.
				conn.Close()
				s.log.Error("lsp: not joining the group of this editor; starting an IDE companion of its own", "socket", path, "err", err)
				ev, err := start(in)
				return ev, nil, err
			}
			s.log.Info("lsp: another gemkit serves this editor and workspace; passing this client's context to it", "socket", path)
			s.follow(conn, path, in, start)
			return noEvents{}, nil, nil
		}
		if !errors.Is(derr, syscall.ECONNREFUSED) && !errors.Is(derr, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("join the other gemkit of this editor at %s: %w", path, derr)
		}
		// A leader that died without removing its socket: clear it.
		_ = os.Remove(path)
	}
	return nil, nil, fmt.Errorf("could not lead or join the group of this editor at %s", path)
}

// dialGroup connects to the group's leader. A socket that refuses may be
// one a starting leader has bound and not yet listens on (net.Listen
// binds, then listens): it is asked again for a while before it is taken
// for the socket of a leader that died, whose removal would let two
// servers of one editor each lead.
func dialGroup(path string) (net.Conn, error) {
	conn, err := net.Dial("unix", path)
	for i := 0; i < 20 && errors.Is(err, syscall.ECONNREFUSED); i++ {
		time.Sleep(25 * time.Millisecond)
		conn, err = net.Dial("unix", path)
	}
	return conn, err
}

// listenGroup binds the group's socket in the discovery directory and
// makes it 0600. The directory may be shared (another user may have
// created $TMPDIR/gemini/ide), so lead and join also check the peer's
// uid (proc.SameUser).
func listenGroup(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	_ = os.Chmod(path, 0o600)
	return ln, nil
}

// startLead makes s lead the group at ln: it accepts followers until s
// stops, and the socket goes when Run returns (closeGroup).
func (s *Server) startLead(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groupDone {
		ln.Close()
		return
	}
	s.groupLn = ln
	go s.lead(ln)
}

// closeGroup closes the group's socket if s leads, which removes it.
func (s *Server) closeGroup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groupDone = true
	if s.groupLn != nil {
		s.groupLn.Close()
	}
}

// lead accepts followers until s stops.
func (s *Server) lead(ln net.Listener) {
	go func() {
		<-s.ctx.Done()
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		if err := proc.SameUser(conn); err != nil {
			s.log.Warn("lsp: refused a connection to the group's socket", "err", err)
			conn.Close()
			continue
		}
		go s.serveFollower(conn)
	}
}

// serveFollower applies a follower's forwarded messages as if they came
// from s's own client, answering its requests on conn.
func (s *Server) serveFollower(conn net.Conn) {
	defer conn.Close()
	go func() {
		<-s.ctx.Done()
		conn.Close()
	}()
	// opened holds the documents the follower's client has open: when it
	// goes, they leave the context (the editor may live on, as when eglot
	// shuts one of its servers down).
	opened := map[string]bool{}
	fc := newConn(conn, conn, s.opts)
	err := fc.Run(s.ctx, jsonrpc.HandlerFunc(func(_ context.Context, r jsonrpc.Request) (any, error) {
		if r.IsNotification() {
			s.notification(r.Method, r.Params)
			trackOpen(opened, r.Method, r.Params)
			return nil, nil
		}
		if r.Method == "shutdown" {
			// Only the leader's own client shuts it down; a follower
			// answers its client's shutdown itself.
			return nil, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: shutdown is not passed to the group's leader"}
		}
		result, rpcErr := s.request(r.Method, r.Params)
		if rpcErr != nil {
			return nil, rpcErr
		}
		return result, nil
	}))
	if s.ctx.Err() != nil {
		return
	}
	if !errors.Is(err, io.EOF) {
		s.log.Debug("lsp: a follower left", "err", err)
	}
	for path := range opened {
		s.followerClosed(path)
	}
}

// trackOpen follows a follower's didOpen and didClose.
func trackOpen(opened map[string]bool, method string, params json.RawMessage) {
	if method != "textDocument/didOpen" && method != "textDocument/didClose" {
		return
	}
	var p struct {
		TextDocument docID `json:"textDocument"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	path := pathOf(p.TextDocument.URI)
	if path == "" {
		return
	}
	if method == "textDocument/didOpen" {
		opened[path] = true
	} else {
		delete(opened, path)
	}
}

// followerClosed drops a document of a follower that went without
// closing it. A proposal waiting in it is rejected and the buffer's text
// put back: no client of gemkit's sees that buffer's saves any more.
func (s *Server) followerClosed(path string) {
	s.mu.Lock()
	p := s.proposals[path]
	s.mu.Unlock()
	if p != nil {
		s.reject(p, true, false)
	}
	s.mu.Lock()
	delete(s.docs, path)
	s.mu.Unlock()
	s.events().Close(path)
}

// follow passes s's client messages to the leader on conn from now on;
// the leader's replies go to s's client as they are. When the leader
// goes, s joins the group again: as its new leader, or a follower of the
// one that won.
func (s *Server) follow(conn net.Conn, path string, in Init, start StartFunc) {
	s.mu.Lock()
	s.leader = conn
	s.mu.Unlock()
	go func() {
		go func() {
			<-s.ctx.Done()
			conn.Close()
		}()
		fr := jsonrpc.HeaderFramer().NewReader(conn, s.opts.MaxMessage)
		for {
			body, err := fr.Next()
			if err != nil {
				break
			}
			if err := s.conn.Send(body); err != nil {
				break
			}
		}
		s.mu.Lock()
		s.leader = nil
		ending := s.phase == phaseShutdown
		s.mu.Unlock()
		if s.ctx.Err() != nil || ending {
			return // the editor is quitting: its servers all go
		}
		s.log.Info("lsp: the gemkit leading this editor's group has gone; taking over")
		ev, ln, err := s.join(path, in, start)
		if err != nil {
			s.log.Error("lsp: taking over the editor's group", "err", err)
			return
		}
		s.mu.Lock()
		s.ev = ev
		var paths []string
		for p := range s.docs {
			paths = append(paths, p)
		}
		s.mu.Unlock()
		if ln != nil {
			s.startLead(ln)
		}
		for _, p := range paths {
			ev.Focus(p, nil, "")
		}
	}()
}

// forward sends a client message to the leader; false when s leads or
// stands alone.
func (s *Server) forward(id json.RawMessage, method string, params json.RawMessage) bool {
	s.mu.Lock()
	conn := s.leader
	s.mu.Unlock()
	if conn == nil {
		return false
	}
	b, _ := json.Marshal(&jsonrpc.Request{ID: id, Method: method, Params: params})
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if _, err := conn.Write(jsonrpc.HeaderFramer().Frame(b)); err != nil {
		s.log.Warn("lsp: passing a message to the leading gemkit", "method", method, "err", err)
		return false
	}
	return true
}
