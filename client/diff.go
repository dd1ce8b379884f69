package client

// Diffs: the proposals shown in the editor, one at a time, and their outcomes.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/ide"
)

// diffTimeoutError is ErrDiffTimeout with the timeout that ran out.
type diffTimeoutError struct{ after time.Duration }

func (e diffTimeoutError) Error() string {
	s := e.after.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s") // 10m, not 10m0s
	}
	return "no answer to the diff within " + s
}

func (e diffTimeoutError) Is(target error) bool { return target == ErrDiffTimeout }

// DiffOutcome is how a diff ended in the editor.
type DiffOutcome struct {
	// Accepted is false when the person rejected or closed the diff.
	Accepted bool
	// Content is the accepted text, with the person's own edits.
	Content string
}

// resolve ends the pending diff of filePath, if any.
func (c *Client) resolve(filePath string, o DiffOutcome) {
	c.mu.Lock()
	ch, ok := c.pending[filePath]
	delete(c.pending, filePath)
	c.mu.Unlock()
	if !ok {
		c.log.Debug("no pending diff", "file", filePath)
		return
	}
	ch <- o
}

// OpenDiff shows newContent against filePath in the editor and waits for the
// person's answer: accepted (with the final text, edits included) or
// rejected. Diffs run one at a time, as in the real client (acquireMutex in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts). It gives up after
// [Options.DiffTimeout] ([ide.DiffTimeout] by default), when ctx ends or
// when the connection is lost; it then closes the diff in the editor, best
// effort, before the next diff may start.
func (c *Client) OpenDiff(ctx context.Context, filePath, newContent string) (DiffOutcome, error) {
	d, err := c.StartDiff(ctx, filePath, newContent)
	if err != nil {
		return DiffOutcome{}, err
	}
	return d.Wait(ctx)
}

// PendingDiff is a diff the editor shows and has not answered yet. Its
// owner must call Wait or Abandon, which let the next diff start.
type PendingDiff struct {
	c        *Client
	path     string
	ch       chan DiffOutcome
	deadline *time.Timer
	once     sync.Once
}

// StartDiff asks the editor to show the diff and returns once the
// companion acknowledged it (openDiff answered), holding the client's
// one-diff lock until [PendingDiff.Wait] or [PendingDiff.Abandon].
func (c *Client) StartDiff(ctx context.Context, filePath, newContent string) (*PendingDiff, error) {
	if !utf8.ValidString(newContent) {
		// JSON would carry U+FFFD in place of the bad bytes: the editor
		// would show, and the person accept, something else.
		return nil, fmt.Errorf("openDiff %s: the proposal is not valid UTF-8", filePath)
	}
	select {
	case c.diffSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.doneError()
	}
	if c.State().Status != Connected {
		<-c.diffSem
		return nil, ErrNotConnected
	}
	d := &PendingDiff{c: c, path: filePath, ch: make(chan DiffOutcome, 1), deadline: time.NewTimer(c.diffTimeout)}
	c.mu.Lock()
	c.pending[filePath] = d.ch
	c.mu.Unlock()
	callCtx, cancel := context.WithTimeout(ctx, c.diffTimeout)
	res, err := c.callTool(callCtx, ide.ToolOpenDiff, ide.OpenDiffRequest{FilePath: filePath, NewContent: newContent})
	timedOut := callCtx.Err() != nil
	cancel()
	if err != nil {
		if timedOut {
			// The companion may have shown the diff before the call was
			// given up; do not leave it open in the editor.
			d.giveUp()
		} else {
			d.Abandon()
		}
		select {
		case <-c.done:
			return nil, c.doneError()
		default:
		}
		return nil, fmt.Errorf("openDiff %s: %w", filePath, err)
	}
	if res.IsError {
		d.Abandon()
		return nil, fmt.Errorf("openDiff %s: %s", filePath, toolErrorText(res, ide.ToolOpenDiff))
	}
	return d, nil
}

// Path is the diffed file.
func (d *PendingDiff) Path() string { return d.path }

// Wait waits for the person's answer; see [Client.OpenDiff].
func (d *PendingDiff) Wait(ctx context.Context) (DiffOutcome, error) {
	c := d.c
	select {
	case o := <-d.ch:
		d.release()
		return o, nil
	case <-ctx.Done():
		d.giveUp()
		return DiffOutcome{}, ctx.Err()
	case <-d.deadline.C:
		d.giveUp()
		return DiffOutcome{}, diffTimeoutError{c.diffTimeout}
	case <-c.done:
		select {
		case o := <-d.ch:
			// Answered just before the connection ended (a companion
			// that stops rejects what waits): select picks either.
			d.release()
			return o, nil
		default:
		}
		d.Abandon()
		return DiffOutcome{}, c.doneError()
	}
}

// Abandon stops waiting without touching the editor and lets the next
// diff start.
func (d *PendingDiff) Abandon() {
	d.forget()
	d.release()
}

// giveUp stops waiting and closes the diff in the editor before it lets
// the next diff start: were the lock released first, a next diff of the
// same file could be shown and then closed by this closeDiff.
func (d *PendingDiff) giveUp() {
	d.forget()
	d.c.closeQuietly(d.path)
	d.release()
}

// forget removes the diff from the pending ones, so that a late answer
// is dropped.
func (d *PendingDiff) forget() {
	d.c.mu.Lock()
	if d.c.pending[d.path] == d.ch {
		delete(d.c.pending, d.path)
	}
	d.c.mu.Unlock()
}

func (d *PendingDiff) release() {
	d.once.Do(func() {
		d.deadline.Stop()
		<-d.c.diffSem
	})
}

// closeQuietly closes an abandoned diff in the editor, best effort.
func (c *Client) closeQuietly(filePath string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.CloseDiff(ctx, filePath); err != nil {
		c.log.Debug("closing abandoned diff", "file", filePath, "err", err)
	}
}

// CloseDiff closes the diff of filePath in the editor without an accept
// or reject notification and returns the right side's text; ok is false
// when the companion had no such diff ({"content": null}).
func (c *Client) CloseDiff(ctx context.Context, filePath string) (content string, ok bool, err error) {
	text, err := c.CloseDiffText(ctx, filePath)
	if err != nil {
		return "", false, err
	}
	return ParseCloseDiffText(text)
}

// CloseDiffText calls closeDiff and returns its first text block as sent
// (nil when there is none), for callers that judge its shape.
func (c *Client) CloseDiffText(ctx context.Context, filePath string) (*string, error) {
	return c.closeDiffText(ctx, ide.CloseDiffRequest{FilePath: filePath})
}

func (c *Client) closeDiffText(ctx context.Context, req ide.CloseDiffRequest) (*string, error) {
	res, err := c.callTool(ctx, ide.ToolCloseDiff, req)
	if err != nil {
		return nil, fmt.Errorf("closeDiff %s: %w", req.FilePath, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("closeDiff %s: %s", req.FilePath, toolErrorText(res, ide.ToolCloseDiff))
	}
	return firstText(res), nil
}

// ParseCloseDiffText reads the text block of a closeDiff result the way the
// real client does (IdeClient.closeDiff in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts): JSON whose "content" is the text (ok)
// or null or absent (not ok). Anything else is an error here, where the real
// client only logs it.
func ParseCloseDiffText(text *string) (content string, ok bool, err error) {
	if text == nil || *text == "" {
		return "", false, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*text), &v); err != nil || v == nil {
		return "", false, fmt.Errorf("closeDiff text is not a JSON object: %.80q", *text)
	}
	raw, has := v["content"]
	if !has || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &content); err != nil {
		return "", false, fmt.Errorf("closeDiff content is not a string: %.80s", raw)
	}
	return content, true, nil
}

// ResolveDiffFromCLI ends the pending diff of filePath from the CLI side, as
// the real client does when the person answers in the terminal
// (resolveDiffFromCli in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts): it closes the diff in the editor and
// resolves the waiting OpenDiff with outcome accepted (with the editor's
// text) or rejected. The diff stops being pending before closeDiff is sent,
// and closeDiff carries the deprecated suppressNotification as the real
// client's does, so that a companion that still announces the close cannot
// turn the person's answer into its own.
func (c *Client) ResolveDiffFromCLI(ctx context.Context, filePath string, accept bool) error {
	c.mu.Lock()
	ch, pending := c.pending[filePath]
	delete(c.pending, filePath)
	c.mu.Unlock()
	text, err := c.closeDiffText(ctx, ide.CloseDiffRequest{FilePath: filePath, SuppressNotification: true})
	var content string
	if err == nil {
		content, _, err = ParseCloseDiffText(text)
	}
	if pending {
		if accept {
			ch <- DiffOutcome{Accepted: true, Content: content}
		} else {
			ch <- DiffOutcome{}
		}
	}
	return err
}
