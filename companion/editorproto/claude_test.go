package editorproto

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
)

func (r *recorder) Mention(p string, start, end int) {
	r.add(fmt.Sprintf("mention %s %d-%d", p, start, end))
}

func TestMention(t *testing.T) {
	p := newPair(t, Options{})
	p.send(t, `{"jsonrpc":"2.0","method":"editor/mention","params":{"path":"/w/a.go","lineStart":2,"lineEnd":5}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"editor/mention","params":{"path":"/w/b.go"}}`)
	p.send(t, `{"jsonrpc":"2.0","id":7,"method":"editor/mention","params":{"path":"/w/c.go","lineStart":3,"lineEnd":1}}`)
	if got := p.read(t); !strings.Contains(got, `"id":7`) || !strings.Contains(got, "lineEnd at least lineStart") {
		t.Errorf("reply to a bad range: %s", got)
	}
	p.sync(t)
	want := []string{"mention /w/a.go 2-5", "mention /w/b.go 0-0", "close /sync"}
	if got := p.ev.all(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestDiagnosticsRequest(t *testing.T) {
	p := newPair(t, Options{})
	type res struct {
		files []companion.FileDiagnostics
		err   error
	}
	ask := func(path string) chan res {
		ch := make(chan res, 1)
		go func() {
			f, err := p.conn.Diagnostics(context.Background(), path)
			ch <- res{f, err}
		}()
		return ch
	}

	ch := ask("/w/a.go")
	if got := p.read(t); got != `{"jsonrpc":"2.0","id":1,"method":"diagnostics/get","params":{"path":"/w/a.go"}}` {
		t.Fatalf("request %s", got)
	}
	p.send(t, `{"jsonrpc":"2.0","id":1,"result":{"files":[{"path":"/w/a.go","diagnostics":[{"message":"m","severity":"warning","range":{"start":{"line":1,"character":1},"end":{"line":1,"character":3}}}]}]}}`)
	r := <-ch
	if r.err != nil || len(r.files) != 1 || r.files[0].Diagnostics[0].Severity != ide.SevWarning || r.files[0].Diagnostics[0].Range.End.Character != 2 {
		t.Errorf("got %+v, %v", r.files, r.err)
	}

	// A plugin without the method has no diagnostics.
	ch = ask("")
	if got := p.read(t); got != `{"jsonrpc":"2.0","id":2,"method":"diagnostics/get","params":{}}` {
		t.Fatalf("request %s", got)
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`)
	if r := <-ch; r.err != nil || r.files == nil || len(r.files) != 0 {
		t.Errorf("method not found: got %+v, %v", r.files, r.err)
	}

	// A severity outside the four is an error a plugin author can act on.
	ch = ask("")
	p.read(t)
	p.send(t, `{"jsonrpc":"2.0","id":3,"result":{"files":[{"path":"/w/a.go","diagnostics":[{"message":"m","severity":"fatal","range":{"start":{"line":1,"character":1},"end":{"line":1,"character":1}}}]}]}}`)
	if r := <-ch; r.err == nil || !strings.Contains(r.err.Error(), `not "fatal"`) {
		t.Errorf("bad severity: %v", r.err)
	}
}
