package codeintel

import (
	"context"
	"errors"
	"testing"
)

// answering is a Source whose Definition answers with loc, or fails with
// err; every other method is the fake's.
type answering struct {
	fakeSource
	loc     []Location
	err     error
	asked   int
	changed []Change
}

func (a *answering) Definition(context.Context, DocPos) ([]Location, error) {
	a.asked++
	return a.loc, a.err
}

func (a *answering) Changed(_ context.Context, ch []Change) error {
	a.changed = append(a.changed, ch...)
	return nil
}

func TestChoose(t *testing.T) {
	editorLoc := []Location{{Path: "/ws/editor.go"}}
	ownLoc := []Location{{Path: "/ws/own.go"}}
	cases := []struct {
		name      string
		editor    *answering // nil: no companion
		own       *answering // nil: own servers off
		want      string
		wantErr   string
		ownAsked  int
		edAsked   int
		noEditor  bool
		noOwnSide bool
	}{
		{name: "editor answers", editor: &answering{loc: editorLoc}, own: &answering{loc: ownLoc}, want: "/ws/editor.go", edAsked: 1},
		{name: "no editor", own: &answering{loc: ownLoc}, want: "/ws/own.go", ownAsked: 1},
		{name: "editor has no client for the file", editor: &answering{err: &NoServerError{Language: "Go", Reason: "the editor has no Go client"}}, own: &answering{loc: ownLoc}, want: "/ws/own.go", edAsked: 1, ownAsked: 1},
		{name: "editor's server lacks it", editor: &answering{err: ErrUnsupported}, own: &answering{loc: ownLoc}, want: "/ws/own.go", edAsked: 1, ownAsked: 1},
		{name: "editor's failure is the answer", editor: &answering{err: errors.New("boom")}, own: &answering{loc: ownLoc}, wantErr: "boom", edAsked: 1},
		{name: "own off, editor cannot", editor: &answering{err: &NoServerError{Reason: "the editor has no Go client"}}, wantErr: "the editor has no Go client", edAsked: 1},
		{name: "nothing at all", wantErr: "no language server can answer: no editor serves this workspace and gemkit's own servers are off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var finder EditorFinder
			if c.editor != nil {
				finder = func(context.Context) Source { return c.editor }
			}
			var own Source
			if c.own != nil {
				own = c.own
			}
			src := Choose(finder, own)
			got, err := src.Definition(context.Background(), DocPos{Path: "/ws/a.go"})
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

// A changed file reaches both sources, whichever answers next.
func TestChooseChangedTellsBoth(t *testing.T) {
	ed, own := &answering{}, &answering{}
	src := Choose(func(context.Context) Source { return ed }, own)
	if err := src.Changed(context.Background(), []Change{{Path: "/ws/a.go"}}); err != nil {
		t.Fatal(err)
	}
	if len(ed.changed) != 1 || len(own.changed) != 1 {
		t.Fatalf("editor told %v, own told %v", ed.changed, own.changed)
	}
}
