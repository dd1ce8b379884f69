package agent

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// ContextSource gives the editor's latest context; *client.Client is one.
// A nil context means none was received.
type ContextSource interface {
	Context() *ide.Context
}

// ideTracker words the editor's context for the model the way Gemini CLI
// does: the whole context as JSON before the first prompt, then before
// each later prompt only what changed (files opened and closed, the active
// file, the cursor, the selection), and nothing when nothing did.
type ideTracker struct {
	src  ContextSource
	last *ide.Context
	sent bool
}

type ctxCursor struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type ctxActive struct {
	Path         string     `json:"path"`
	Cursor       *ctxCursor `json:"cursor,omitempty"`
	SelectedText string     `json:"selectedText,omitempty"`
}

type ctxFull struct {
	ActiveFile     *ctxActive `json:"activeFile,omitempty"`
	OtherOpenFiles []string   `json:"otherOpenFiles,omitempty"`
}

type ctxActiveGone struct {
	Path         *string `json:"path"`
	PreviousPath string  `json:"previousPath"`
}

type ctxCursorMoved struct {
	Path   string    `json:"path"`
	Cursor ctxCursor `json:"cursor"`
}

type ctxSelection struct {
	Path         string `json:"path"`
	SelectedText string `json:"selectedText"`
}

type ctxChanges struct {
	FilesOpened       []string        `json:"filesOpened,omitempty"`
	FilesClosed       []string        `json:"filesClosed,omitempty"`
	ActiveFileChanged any             `json:"activeFileChanged,omitempty"`
	CursorMoved       *ctxCursorMoved `json:"cursorMoved,omitempty"`
	SelectionChanged  *ctxSelection   `json:"selectionChanged,omitempty"`
}

const (
	ideFullIntro  = "Here is the user's editor context as a JSON object. This is for your information only."
	ideDeltaIntro = "Here is a summary of changes in the user's editor context, in JSON format. This is for your information only."
)

// next returns the text to put before the next prompt ("" for none) and
// remembers the context it describes.
func (t *ideTracker) next() string {
	if t == nil || t.src == nil {
		return ""
	}
	cur := t.src.Context()
	if cur == nil {
		return ""
	}
	defer func() { t.last, t.sent = cur, true }()
	if !t.sent || t.last == nil {
		return fullContext(cur)
	}
	return deltaContext(t.last, cur)
}

func openFiles(c *ide.Context) []ide.File {
	if c == nil || c.WorkspaceState == nil {
		return nil
	}
	return c.WorkspaceState.OpenFiles
}

func activeOf(files []ide.File) *ide.File {
	for i := range files {
		if files[i].IsActive {
			return &files[i]
		}
	}
	return nil
}

func cursorOf(f *ide.File) *ctxCursor {
	if f.Cursor == nil {
		return nil
	}
	return &ctxCursor{Line: f.Cursor.Line, Character: f.Cursor.Character}
}

func fullContext(c *ide.Context) string {
	files := openFiles(c)
	var d ctxFull
	if a := activeOf(files); a != nil {
		d.ActiveFile = &ctxActive{Path: a.Path, Cursor: cursorOf(a), SelectedText: a.SelectedText}
	}
	for _, f := range files {
		if !f.IsActive {
			d.OtherOpenFiles = append(d.OtherOpenFiles, f.Path)
		}
	}
	if d.ActiveFile == nil && len(d.OtherOpenFiles) == 0 {
		return ""
	}
	return wrapJSON(ideFullIntro, d)
}

func deltaContext(last, cur *ide.Context) string {
	lastFiles, curFiles := openFiles(last), openFiles(cur)
	lastSet := make(map[string]bool, len(lastFiles))
	for _, f := range lastFiles {
		lastSet[f.Path] = true
	}
	curSet := make(map[string]bool, len(curFiles))
	var ch ctxChanges
	for _, f := range curFiles {
		curSet[f.Path] = true
		if !lastSet[f.Path] {
			ch.FilesOpened = append(ch.FilesOpened, f.Path)
		}
	}
	for _, f := range lastFiles {
		if !curSet[f.Path] {
			ch.FilesClosed = append(ch.FilesClosed, f.Path)
		}
	}
	la, ca := activeOf(lastFiles), activeOf(curFiles)
	switch {
	case ca != nil && (la == nil || la.Path != ca.Path):
		ch.ActiveFileChanged = ctxActive{Path: ca.Path, Cursor: cursorOf(ca), SelectedText: ca.SelectedText}
	case ca != nil:
		if cc := cursorOf(ca); cc != nil {
			if lc := cursorOf(la); lc == nil || *lc != *cc {
				ch.CursorMoved = &ctxCursorMoved{Path: ca.Path, Cursor: *cc}
			}
		}
		if la.SelectedText != ca.SelectedText {
			ch.SelectionChanged = &ctxSelection{Path: ca.Path, SelectedText: ca.SelectedText}
		}
	case la != nil:
		ch.ActiveFileChanged = ctxActiveGone{PreviousPath: la.Path}
	}
	if ch.FilesOpened == nil && ch.FilesClosed == nil && ch.ActiveFileChanged == nil && ch.CursorMoved == nil && ch.SelectionChanged == nil {
		return ""
	}
	return wrapJSON(ideDeltaIntro, struct {
		Changes ctxChanges `json:"changes"`
	}{ch})
}

// wrapJSON is intro, then v as JSON indented by two spaces in a json code
// fence, the lines joined by newlines.
func wrapJSON(intro string, v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return strings.Join([]string{intro, "```json", strings.TrimRight(buf.String(), "\n"), "```"}, "\n")
}
