package lspclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Open makes sure the server has the file at path open with its text as
// on disk (or as last given to Set): a file not open yet is opened, one
// changed on disk since is sent again, one gone is closed. languageID is
// LSP's ("go"). It returns the document's version.
func (c *Client) Open(path, languageID string) (int, error) {
	return c.open(path, languageID, false)
}

// OpenChanged is Open for a file changed on disk that the server is to
// take as a change of the workspace: the files it affects are
// diagnosed again (typescript-language-server ignores
// workspace/didChangeWatchedFiles, and diagnoses every open file after
// a document is opened or changed), and their diagnostics are waited
// for as after any change (Diagnostics).
func (c *Client) OpenChanged(path, languageID string) (int, error) {
	return c.open(path, languageID, true)
}

func (c *Client) open(path, languageID string, change bool) (int, error) {
	fi, err := os.Stat(path)
	c.mu.Lock()
	d := c.docs[path]
	var was doc
	if d != nil {
		was = *d
	}
	c.mu.Unlock()
	if d != nil && was.overlay {
		return was.version, nil
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && d != nil {
			c.Close(path)
		}
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", path)
	}
	if d != nil && fi.ModTime().Equal(was.mod) && fi.Size() == was.size {
		return was.version, nil
	}
	text, err := readText(path)
	if err != nil {
		return 0, err
	}
	return c.send(path, languageID, text, fi.ModTime(), fi.Size(), false, change)
}

// Set gives the server text as the file's content, unsaved (an overlay),
// until Open is asked to read the disk again by Reload.
func (c *Client) Set(path, languageID, text string) (int, error) {
	return c.send(path, languageID, text, time.Time{}, -1, true, false)
}

// Reload drops an overlay of path, if any, and sends the file as on
// disk (or closes it when it is gone).
func (c *Client) Reload(path, languageID string) (int, error) {
	c.mu.Lock()
	if d := c.docs[path]; d != nil {
		d.overlay = false
		d.mod, d.size = time.Time{}, -1
	}
	c.mu.Unlock()
	return c.Open(path, languageID)
}

// send opens path with text or sends it as the new full text; a new
// text (didChange), or an opening that change asks to count as one, is a
// change of the workspace that other files' diagnostics wait for.
func (c *Client) send(path, languageID, text string, mod time.Time, size int64, overlay, change bool) (int, error) {
	// sendMu keeps the changes of a file in the order of their versions;
	// mu is not held while writing, since the reading goroutine needs it
	// to take the server's messages (a server blocked writing to gemkit
	// may not read what gemkit writes).
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	d := c.docs[path]
	if d != nil && d.text == text {
		d.mod, d.size, d.overlay = mod, size, overlay
		v := d.version
		c.mu.Unlock()
		return v, nil
	}
	var method string
	var params any
	if d == nil {
		d = &doc{version: 1}
		c.docs[path] = d
		method = "textDocument/didOpen"
		params = map[string]any{"textDocument": map[string]any{"uri": URI(path), "languageId": languageID, "version": 1, "text": text}}
	} else {
		d.version++
		method = "textDocument/didChange"
		params = map[string]any{
			"textDocument":   map[string]any{"uri": URI(path), "version": d.version},
			"contentChanges": []map[string]any{{"text": text}},
		}
	}
	d.text, d.mod, d.size, d.overlay = text, mod, size, overlay
	d.sentSeq = c.seq
	if change || method == "textDocument/didChange" {
		c.changeSeq = c.seq
		c.unanswered[path] = time.Now()
	}
	v := d.version
	c.mu.Unlock()
	if err := c.rpc.notify(method, params); err != nil {
		return 0, &codeintel.ServerError{Server: c.cfg.Name, Reason: "could not be sent the file: " + err.Error()}
	}
	return v, nil
}

// Close closes a document the server has open.
func (c *Client) Close(path string) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	_, ok := c.docs[path]
	delete(c.docs, path)
	delete(c.unanswered, path)
	c.mu.Unlock()
	if ok {
		c.rpc.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": URI(path)}})
	}
}

// OpenDocs lists the paths the server has open.
func (c *Client) OpenDocs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.docs))
	for p := range c.docs {
		out = append(out, p)
	}
	return out
}

// FileEvent is a change of a file on disk, for
// workspace/didChangeWatchedFiles.
type FileEvent struct {
	Path string
	// Type is 1 created, 2 changed, 3 deleted (LSP's FileChangeType).
	Type int
}

// Watched tells the server of files changed on disk that it does not
// have open (one it has open is sent again by Open).
func (c *Client) Watched(events []FileEvent) error {
	if len(events) == 0 {
		return nil
	}
	changes := make([]map[string]any, 0, len(events))
	for _, e := range events {
		changes = append(changes, map[string]any{"uri": URI(e.Path), "type": e.Type})
	}
	c.mu.Lock()
	c.changeSeq = c.seq
	c.mu.Unlock()
	return c.rpc.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": changes})
}

// readText reads a file to send to a server: regular, non-blocking
// open, at most maxDocBytes, UTF-8.
func readText(path string) (string, error) {
	f, err := fsutil.OpenRegular(path)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDocBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxDocBytes {
		return "", fmt.Errorf("%s is larger than %d MiB; language servers are not sent files that large", path, maxDocBytes>>20)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s is not UTF-8 text", path)
	}
	return string(b), nil
}

// Diagnostics returns the diagnostics of path's latest text. A server
// that offers them on request (Pull: gopls with pullDiagnostics,
// pyright, typescript-language-server through tsserver) is asked, and
// computes them for its current view of the workspace; from another,
// the latest diagnostics it published for path are taken, after waiting
// (until ctx ends) for those of the version it was last sent and, for a
// file it has open, for its answer to the latest change of another file
// (pushed).
//
// stale is "" when the diagnostics are current; else it says why they
// may not be: none came in time for the latest text or change (the
// previous ones are returned), or the server answered that it does not
// check the file (gopls: a file its build constraints leave out), which
// no wait would change.
func (c *Client) Diagnostics(ctx context.Context, path string) (diags []codeintel.Diagnostic, stale string) {
	ds, err := c.Pull(ctx, path)
	if err == nil {
		return ds, ""
	}
	if notChecked := c.notChecked(err); notChecked != "" {
		c.mu.Lock()
		p := c.diags[path]
		c.mu.Unlock()
		return p.diags, notChecked
	}
	if !errors.Is(err, codeintel.ErrUnsupported) {
		c.log.Debug("pull diagnostics failed; taking the published ones", "path", path, "err", err)
	}
	return c.pushed(ctx, path)
}

// Pull asks the server for path's diagnostics (textDocument/diagnostic;
// typescript-language-server's tsserver, see tsserver.go), computed for
// its current view of the workspace:
// codeintel.ErrUnsupported when it does not offer them, the server's
// error when it does not check the file.
func (c *Client) Pull(ctx context.Context, path string) ([]codeintel.Diagnostic, error) {
	if !c.Offers("diagnosticProvider") {
		if c.offersTSServerRequest() {
			ds, err := c.pullTSServer(ctx, path)
			if err == nil {
				c.mu.Lock()
				c.pulled[path] = ds
				c.mu.Unlock()
			}
			return ds, err
		}
		return nil, codeintel.ErrUnsupported
	}
	var rep struct {
		Kind  string           `json:"kind"`
		Items []wireDiagnostic `json:"items"`
	}
	err := c.request(ctx, "textDocument/diagnostic", map[string]any{"textDocument": textDocumentID{URI: URI(path)}}, &rep)
	if err != nil {
		return nil, err
	}
	if rep.Kind == "unchanged" {
		// gemkit sends no previousResultId, so a server has nothing to
		// call unchanged; should one, the latest known stand.
		c.mu.Lock()
		defer c.mu.Unlock()
		if ds, ok := c.pulled[path]; ok {
			return ds, nil
		}
		return c.diags[path].diags, nil
	}
	out := make([]codeintel.Diagnostic, 0, len(rep.Items))
	for _, d := range rep.Items {
		out = append(out, d.diagnostic())
	}
	c.mu.Lock()
	c.pulled[path] = out
	c.mu.Unlock()
	return out, nil
}

// notChecked words a server's error answer to a pull ("no package
// metadata for file", gopls's of a file no build of the workspace
// includes): the server answered, and does not check the file. It is ""
// for other failures (a timeout, the server gone).
func (c *Client) notChecked(err error) string {
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code == jsonrpc.CodeMethodNotFound || e.Code == jsonrpc.CodeContentModified {
		return ""
	}
	msg := strings.TrimSpace(e.Message)
	if i := strings.Index(msg, " for file "); i > 0 {
		msg = msg[:i] // the file's URI: the answer names the file
	}
	return fmt.Sprintf("%s does not check this file (%s): a file left out by its build constraints or the server's configuration has no diagnostics", c.cfg.Name, msg)
}

// changeWait bounds the wait for a server's publish for an open file
// after another file changed, when the server does not show by its
// publishing that it has answered the change.
const changeWait = 3 * time.Second

// pushed returns the latest diagnostics the server published for path,
// after waiting (until ctx ends) for those of the version it was last
// sent: a server publishes for a version (gopls), or without one
// (typescript-language-server), then after the change.
//
// For a file the server has open, the answer must also follow the
// latest change of another document: a publish of the file after the
// server's publish for that document; or, since a server need not publish again a file whose problems did
// not change (typescript-language-server publishes no empty list after
// an empty one), a publish for every document changed since, then
// nothing for settleQuiet. changeWait bounds that wait.
func (c *Client) pushed(ctx context.Context, path string) (diags []codeintel.Diagnostic, stale string) {
	var afterChange <-chan time.Time
	for {
		c.mu.Lock()
		p, have := c.diags[path]
		d := c.docs[path]
		ownFresh := have && (d == nil || (p.version != nil && *p.version >= d.version) || (p.version == nil && p.seq > d.sentSeq))
		answered := true
		for _, at := range c.unanswered {
			// One the server has not published for within changeWait
			// it may never publish for (a file outside its project).
			answered = answered && time.Since(at) >= changeWait
		}
		// A publish between a change and the server's publish for the
		// changed document may be the end of the check before it.
		fresh := ownFresh && (d == nil || (answered && p.seq > c.changeSeq && p.seq >= c.answeredSeq))
		quietFor := settleQuiet - time.Since(c.lastPub)
		ch := c.changed
		c.mu.Unlock()
		if fresh || (ownFresh && answered && quietFor <= 0) {
			return p.diags, ""
		}
		var quiet <-chan time.Time
		if ownFresh && answered {
			t := time.NewTimer(quietFor)
			defer t.Stop()
			quiet = t.C
		}
		if ownFresh && afterChange == nil {
			t := time.NewTimer(changeWait)
			defer t.Stop()
			afterChange = t.C
		}
		select {
		case <-ch:
		case <-quiet:
		case <-afterChange:
			return p.diags, fmt.Sprintf("%s has not reported on this file since another file changed: the problems may be stale; ask again shortly", c.cfg.Name)
		case <-ctx.Done():
			return p.diags, fmt.Sprintf("%s has not reported on this file's latest text yet: the problems may be stale; ask again shortly", c.cfg.Name)
		case <-c.exited:
			return p.diags, fmt.Sprintf("%s exited before it reported on this file", c.cfg.Name)
		}
	}
}

// settleQuiet is how long a server that has published for every
// document changed must publish nothing more for the others' problems
// to count as unchanged (typescript-language-server diagnoses the open
// files one after another, each published 50 ms after its last part).
const settleQuiet = 300 * time.Millisecond

// AllDiagnostics returns the latest diagnostics published for every
// file, or asked for (Diagnostics) when that was later.
func (c *Client) AllDiagnostics() map[string][]codeintel.Diagnostic {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]codeintel.Diagnostic, len(c.diags))
	for p, d := range c.diags {
		out[p] = d.diags
	}
	for p, d := range c.pulled {
		out[p] = d
	}
	return out
}

// Settle waits until the server has published nothing for quiet, at
// most until ctx ends: after a change, a server republishes the files it
// affects (gopls: the package's other files), one after another.
func (c *Client) Settle(ctx context.Context, quiet time.Duration) {
	for {
		c.mu.Lock()
		since := time.Since(c.lastPub)
		ch := c.changed
		c.mu.Unlock()
		if since >= quiet {
			return
		}
		t := time.NewTimer(quiet - since)
		select {
		case <-t.C:
		case <-ch:
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.exited:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// WaitIdle waits until the server reports no work in progress, at most
// until ctx ends; false when it is still busy.
func (c *Client) WaitIdle(ctx context.Context) bool {
	for {
		c.mu.Lock()
		busy := len(c.progress) > 0
		ch := c.changed
		c.mu.Unlock()
		if !busy {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-c.exited:
			return false
		}
	}
}
