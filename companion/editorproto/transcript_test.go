package editorproto

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/golden"
)

// The conformance cases of the editor protocol are transcripts in
// testdata/*.txtar, one case a file, so that plugin authors can read them
// and a new case needs no Go code:
//
//	What the case shows, in prose.
//	-- editor --
//	the lines the editor writes to gemkit, one JSON-RPC message a line
//	-- gemkit --
//	the lines gemkit answers with, in order
//	-- events --
//	what gemkit makes of the lines: the calls on its Events, one a line
//
// Each transcript runs on a fresh Conn. The test fails when gemkit's
// answer or events differ; go test -update rewrites the gemkit and events
// sections from what gemkit does now.
func TestTranscripts(t *testing.T) {
	golden.Transcripts(t, "testdata", func(t *testing.T, a *golden.Archive) {
		replies, events := runTranscript(t, a.Get("editor"))
		a.Set("gemkit", replies)
		a.Set("events", events)
	})
}

const (
	syncLine  = `{"jsonrpc":"2.0","id":"transcript-end","method":"editor/close","params":{"path":"/transcript-end"}}`
	syncReply = `{"jsonrpc":"2.0","id":"transcript-end","result":{}}`
	syncEvent = `close /transcript-end`
)

// runTranscript sends the editor's lines to a fresh Conn, then one request
// of its own whose answer marks the end (gemkit handles lines in order),
// and returns gemkit's lines and the events before that mark.
func runTranscript(t *testing.T, editor string) (replies, events string) {
	t.Helper()
	p := newPair(t, Options{})
	lines := make(chan string)
	go func() {
		defer close(lines)
		for p.out.Scan() {
			lines <- p.out.Text()
		}
	}()
	go func() {
		for _, l := range strings.SplitAfter(editor, "\n") {
			if l == "" {
				continue
			}
			if _, err := p.in.Write([]byte(l)); err != nil {
				return
			}
		}
		p.in.Write([]byte(syncLine + "\n"))
	}()
	var got strings.Builder
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("gemkit stopped writing before the end of the transcript; so far:\n%s", got.String())
			}
			if l == syncReply {
				done = true
				break
			}
			got.WriteString(l + "\n")
		case <-time.After(30 * time.Second):
			t.Fatalf("no end of the transcript from gemkit; so far:\n%s", got.String())
		}
	}
	var ev strings.Builder
	for _, e := range p.ev.all() {
		if e != syncEvent {
			ev.WriteString(e + "\n")
		}
	}
	return got.String(), ev.String()
}

// quoteRE finds the transcripts docs/editor-protocol.md quotes: a marker
// naming the file, then a fenced block.
var quoteRE = regexp.MustCompile("(?s)<!-- transcript: ([\\w./-]+) -->\n```\n(.*?)```\n")

// TestDocQuotesTranscripts: every exchange docs/editor-protocol.md quotes
// under a transcript marker is the tested transcript itself, rendered with
// > for the editor's lines and < for gemkit's. go test -update rewrites
// the quoted blocks.
func TestDocQuotesTranscripts(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "editor-protocol.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	out := quoteRE.ReplaceAllFunc(doc, func(m []byte) []byte {
		n++
		name := string(quoteRE.FindSubmatch(m)[1])
		a := golden.ReadArchive(t, filepath.Join("testdata", filepath.FromSlash(name)))
		var b bytes.Buffer
		fmt.Fprintf(&b, "<!-- transcript: %s -->\n```\n", name)
		if a.Get("route") != "" {
			// gemkit asks, the editor answers: each request, then its
			// answer.
			asks, answers := nonEmptyLines(a.Get("gemkit")), nonEmptyLines(a.Get("editor"))
			for i, l := range asks {
				b.WriteString("< " + l + "\n")
				if i < len(answers) {
					b.WriteString("> " + answers[i] + "\n")
				}
			}
		}
		for _, sec := range []struct{ name, mark string }{{"editor", "> "}, {"gemkit", "< "}} {
			if a.Get("route") != "" {
				break
			}
			for _, l := range strings.SplitAfter(a.Get(sec.name), "\n") {
				if l != "" {
					b.WriteString(sec.mark + l)
				}
			}
		}
		b.WriteString("```\n")
		return b.Bytes()
	})
	if n == 0 {
		t.Fatalf("%s quotes no transcript", path)
	}
	golden.Check(t, path, out)
}
