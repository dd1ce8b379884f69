package agent

import (
	"testing"

	"github.com/gemkit/gemkit/ide"
)

type staticContext struct{ c *ide.Context }

func (s *staticContext) Context() *ide.Context { return s.c }

func ctxOf(files ...ide.File) *ide.Context {
	return &ide.Context{WorkspaceState: &ide.WorkspaceState{OpenFiles: files}}
}

// TestIDETracker: the full context first, then only what changed, worded
// as Gemini CLI 0.61 words them.
func TestIDETracker(t *testing.T) {
	src := &staticContext{}
	tr := ideTracker{src: src}
	if s := tr.next(); s != "" {
		t.Fatalf("no context yet, got %q", s)
	}
	src.c = ctxOf(ide.File{Path: "/w/a.go", IsActive: true, Cursor: &ide.Cursor{Line: 3, Character: 1}, SelectedText: "x<y"}, ide.File{Path: "/w/b.go"})
	want := "Here is the user's editor context as a JSON object. This is for your information only.\n```json\n" +
		"{\n  \"activeFile\": {\n    \"path\": \"/w/a.go\",\n    \"cursor\": {\n      \"line\": 3,\n      \"character\": 1\n    },\n    \"selectedText\": \"x<y\"\n  },\n  \"otherOpenFiles\": [\n    \"/w/b.go\"\n  ]\n}\n```"
	if s := tr.next(); s != want {
		t.Fatalf("full:\n%s\nwant:\n%s", s, want)
	}
	if s := tr.next(); s != "" {
		t.Fatalf("unchanged, got %q", s)
	}
	src.c = ctxOf(ide.File{Path: "/w/a.go", IsActive: true, Cursor: &ide.Cursor{Line: 4, Character: 2}}, ide.File{Path: "/w/c.go"})
	want = "Here is a summary of changes in the user's editor context, in JSON format. This is for your information only.\n```json\n" +
		"{\n  \"changes\": {\n    \"filesOpened\": [\n      \"/w/c.go\"\n    ],\n    \"filesClosed\": [\n      \"/w/b.go\"\n    ],\n" +
		"    \"cursorMoved\": {\n      \"path\": \"/w/a.go\",\n      \"cursor\": {\n        \"line\": 4,\n        \"character\": 2\n      }\n    },\n" +
		"    \"selectionChanged\": {\n      \"path\": \"/w/a.go\",\n      \"selectedText\": \"\"\n    }\n  }\n}\n```"
	if s := tr.next(); s != want {
		t.Fatalf("delta:\n%s\nwant:\n%s", s, want)
	}
	src.c = ctxOf(ide.File{Path: "/w/c.go"})
	want = "Here is a summary of changes in the user's editor context, in JSON format. This is for your information only.\n```json\n" +
		"{\n  \"changes\": {\n    \"filesClosed\": [\n      \"/w/a.go\"\n    ],\n    \"activeFileChanged\": {\n      \"path\": null,\n      \"previousPath\": \"/w/a.go\"\n    }\n  }\n}\n```"
	if s := tr.next(); s != want {
		t.Fatalf("no active file:\n%s\nwant:\n%s", s, want)
	}
}
