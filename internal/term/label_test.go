package term

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
)

// TestCheckDiffLabelledAndNoticeOnItsOwnLine: `gemkit ide check`'s probe
// diff says what it is, and a notice that arrives while the prompt waits
// starts on a new line instead of running into the prompt.
func TestCheckDiffLabelledAndNoticeOnItsOwnLine(t *testing.T) {
	s := start(t, Options{})
	probe := filepath.Join(t.TempDir(), ide.CheckProbePrefix+"abc.txt")
	if err := s.f.OpenDiff(context.Background(), probe, "x\n"); err != nil {
		t.Fatal(err)
	}
	s.waitPrompts(1)
	if !strings.Contains(s.out.String(), "a test diff from `gemkit ide check`") {
		t.Fatalf("the check's diff is not labelled:\n%s", s.out.String())
	}
	if _, _, err := s.f.CloseDiff(context.Background(), probe); err != nil {
		t.Fatal(err)
	}
	s.waitOut("the close notice", func(o string) bool { return strings.Contains(o, "closed the diff") })
	if o := s.out.String(); !strings.Contains(o, promptText+"\nThe CLI closed the diff") {
		t.Fatalf("the notice runs into the prompt:\n%q", o)
	}
	s.finish()
}
