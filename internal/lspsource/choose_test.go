package lspsource

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// answering is a Conn whose clients answer every lsp/request with one
// result (or err, or, with no clients, the reason), and record what they
// are asked.
type answering struct {
	clients []string
	result  string
	reason  string
	err     error
	asked   int
	changed []ide.LSPChangedParams
}

func (a *answering) Call(_ context.Context, method string, params, result any) error {
	switch method {
	case ide.MethodLSPChanged:
		a.changed = append(a.changed, params.(ide.LSPChangedParams))
		return nil
	case ide.MethodLSPRequest:
		a.asked++
		if a.err != nil {
			return a.err
		}
		res := ide.LSPRequestResult{Clients: a.clients, Answers: []ide.LSPAnswer{}, Reason: a.reason}
		if a.result != "" {
			for _, c := range a.clients {
				res.Answers = append(res.Answers, ide.LSPAnswer{Client: c, Result: json.RawMessage(a.result)})
			}
		}
		b, _ := json.Marshal(res)
		return json.Unmarshal(b, result)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
}

const (
	editorLoc = `[{"uri":"file:///ws/editor.go","range":{"start":{"line":1,"character":0},"end":{"line":1,"character":1}}}]`
	ownLoc    = `[{"uri":"file:///ws/own.go","range":{"start":{"line":1,"character":0},"end":{"line":1,"character":1}}}]`
)

// The editor's clients answer first; gemkit's own answer when the editor
// has no client for the file or its server lacks the request, and only
// then; a failure of the editor's is the answer.
func TestChoose(t *testing.T) {
	cases := []struct {
		name              string
		editor, own       *answering // nil: no editor, own servers off
		want, wantErr     string
		edAsked, ownAsked int
	}{
		{name: "editor answers", editor: &answering{clients: []string{"gopls"}, result: editorLoc}, own: &answering{clients: []string{"gopls"}, result: ownLoc}, want: "/ws/editor.go", edAsked: 1},
		{name: "no editor", own: &answering{clients: []string{"gopls"}, result: ownLoc}, want: "/ws/own.go", ownAsked: 1},
		{name: "editor has no client for the file", editor: &answering{}, own: &answering{clients: []string{"gopls"}, result: ownLoc}, want: "/ws/own.go", edAsked: 1, ownAsked: 1},
		{name: "editor's server lacks it", editor: &answering{clients: []string{"pylsp"}}, own: &answering{clients: []string{"gopls"}, result: ownLoc}, want: "/ws/own.go", edAsked: 1, ownAsked: 1},
		{name: "editor lends no clients", editor: &answering{err: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: lsp/request"}}, own: &answering{clients: []string{"gopls"}, result: ownLoc}, want: "/ws/own.go", edAsked: 1, ownAsked: 1},
		{name: "editor's failure is the answer", editor: &answering{err: errors.New("boom")}, own: &answering{clients: []string{"gopls"}, result: ownLoc}, wantErr: "boom", edAsked: 1},
		{name: "own off, editor cannot", editor: &answering{}, wantErr: "Neovim has no language client for /ws/a.go", edAsked: 1},
		{name: "own servers say why", own: &answering{reason: "no language server for Go files is installed"}, wantErr: "no language server for Go files is installed", ownAsked: 1},
		{name: "nothing at all", wantErr: "no language server can answer: no editor serves this workspace and gemkit's own servers are off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var editor func(context.Context) *Clients
			if c.editor != nil {
				editor = func(context.Context) *Clients { return &Clients{Conn: c.editor, Name: "Neovim", Unsaved: true} }
			}
			var own *Clients
			if c.own != nil {
				own = &Clients{Conn: c.own, Confined: true}
			}
			got, err := New(editor, own).Definition(context.Background(), codeintel.DocPos{Path: "/ws/a.go"})
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
			} else if err != nil || len(got) != 1 || got[0].Path != c.want {
				t.Fatalf("got %v, %v; want %s", got, err, c.want)
			}
			if c.editor != nil && c.editor.asked != c.edAsked {
				t.Errorf("editor asked %d times, want %d", c.editor.asked, c.edAsked)
			}
			if c.own != nil && c.own.asked != c.ownAsked {
				t.Errorf("own servers asked %d times, want %d", c.own.asked, c.ownAsked)
			}
		})
	}
}

// A changed file reaches both sets of clients, whichever answers next;
// an agent's text not written reaches only gemkit's own.
func TestChangedTellsBoth(t *testing.T) {
	ed, own := &answering{}, &answering{}
	src := New(func(context.Context) *Clients { return &Clients{Conn: ed, Name: "Neovim", Unsaved: true} }, &Clients{Conn: own})
	text := "package a\n"
	if err := src.Changed(context.Background(), []codeintel.Change{{Path: "/ws/a.go"}, {Path: "/ws/b.go", Text: &text}}); err != nil {
		t.Fatal(err)
	}
	if len(ed.changed) != 1 || len(ed.changed[0].Paths) != 1 || ed.changed[0].Texts != nil {
		t.Errorf("editor told %+v", ed.changed)
	}
	if len(own.changed) != 1 || len(own.changed[0].Paths) != 2 || own.changed[0].Texts["/ws/b.go"] != text {
		t.Errorf("own told %+v", own.changed)
	}
}

// Answers are confined while no editor answers (codeintel.Confined).
func TestConfined(t *testing.T) {
	var found *Clients
	src := New(func(context.Context) *Clients { return found }, &Clients{Conn: &answering{}, Confined: true})
	if !src.Confined(context.Background()) {
		t.Error("gemkit's own servers alone are not confined")
	}
	found = &Clients{Conn: &answering{}, Name: "Neovim"}
	if src.Confined(context.Background()) {
		t.Error("an editor's clients are taken as confined")
	}
}
