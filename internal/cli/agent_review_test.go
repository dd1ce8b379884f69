package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/term"
)

// TestTerminalReviewerKeys: the terminal review of run and chat answers
// with the keys of ide serve: e edits the proposal in $EDITOR and shows it
// again, a accepts what stands (the edit included), r rejects; anything
// else asks again.
func TestTerminalReviewerKeys(t *testing.T) {
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\necho 'by hand' >> \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := agent.Proposal{Path: "/ws/a.txt", Rel: "a.txt", Old: "one\n", New: "one\ntwo\n"}
	tests := []struct {
		input        string
		wantAccepted bool
		wantContent  string
		wantOut      []string
	}{
		{"a\n", true, "one\ntwo\n", []string{"+two", "accept [a], reject [r], or edit [e]?"}},
		{"r\n", false, "one\ntwo\n", nil},
		{"x\ne\na\n", true, "one\ntwo\nby hand\n", []string{"Please answer a (accept)", "+by hand", "b/a.txt (edited)"}},
	}
	for _, tc := range tests {
		var errb bytes.Buffer
		s := Streams{In: strings.NewReader(tc.input), Out: &errb, Err: &errb}
		r := &terminalReviewer{s: s, lines: term.NewLines(s.In, s.Err), getenv: func(k string) string {
			if k == "EDITOR" {
				return editor
			}
			return ""
		}}
		d, err := r.Review(context.Background(), p)
		if err != nil {
			t.Fatalf("%q: %v", tc.input, err)
		}
		if d.Accepted != tc.wantAccepted || (d.Accepted && d.Content != tc.wantContent) {
			t.Errorf("%q: decision %+v, want accepted %v with %q", tc.input, d, tc.wantAccepted, tc.wantContent)
		}
		for _, w := range tc.wantOut {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%q: output lacks %q:\n%s", tc.input, w, errb.String())
			}
		}
	}
}
