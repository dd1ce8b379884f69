package lspclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Open makes sure the server has the file at path open with its text as
// on disk (or as last given to Set): a file not open yet is opened, one
// changed on disk since is sent again, one gone is closed. languageID is
// LSP's ("go"). It returns the document's version.
func (c *Client) Open(path, languageID string) (int, error) {
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
	return c.send(path, languageID, text, fi.ModTime(), fi.Size(), false)
}

// Set gives the server text as the file's content, unsaved (an overlay),
// until Open is asked to read the disk again by Reload.
func (c *Client) Set(path, languageID, text string) (int, error) {
	return c.send(path, languageID, text, time.Time{}, -1, true)
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

// send opens path with text or sends it as the new full text.
func (c *Client) send(path, languageID, text string, mod time.Time, size int64, overlay bool) (int, error) {
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
// that offers them on request (textDocument/diagnostic: gopls with
// pullDiagnostics, pyright) is asked, and computes them for its current
// view of the workspace; from another, the latest diagnostics it
// published for path are taken, after waiting (until ctx ends) for those
// of the version it was last sent. ok is false when none came for the
// latest version in time: the previous ones are returned.
func (c *Client) Diagnostics(ctx context.Context, path string) (diags []codeintel.Diagnostic, ok bool) {
	if c.Offers("diagnosticProvider") {
		var rep struct {
			Kind  string           `json:"kind"`
			Items []wireDiagnostic `json:"items"`
		}
		err := c.request(ctx, "textDocument/diagnostic", map[string]any{"textDocument": textDocumentID{URI: URI(path)}}, &rep)
		if err == nil && rep.Kind != "unchanged" {
			out := make([]codeintel.Diagnostic, 0, len(rep.Items))
			for _, d := range rep.Items {
				out = append(out, d.diagnostic())
			}
			c.mu.Lock()
			c.pulled[path] = out
			c.mu.Unlock()
			return out, true
		}
		c.log.Debug("pull diagnostics failed; taking the published ones", "path", path, "err", err)
	}
	return c.pushed(ctx, path)
}

// pushed returns the latest diagnostics the server published for path,
// after waiting (until ctx ends) for those of the version it was last
// sent: a server publishes for a version (gopls), or without one
// (typescript-language-server), then after the change.
func (c *Client) pushed(ctx context.Context, path string) (diags []codeintel.Diagnostic, ok bool) {
	for {
		c.mu.Lock()
		p, have := c.diags[path]
		d := c.docs[path]
		fresh := have && (d == nil || (p.version != nil && *p.version >= d.version) || (p.version == nil && p.seq > d.sentSeq))
		ch := c.changed
		c.mu.Unlock()
		if fresh {
			return p.diags, true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return p.diags, false
		case <-c.exited:
			return p.diags, false
		}
	}
}

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
