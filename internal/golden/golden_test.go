package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestArchiveRoundTrip(t *testing.T) {
	const text = "What the case shows.\n-- editor --\n{\"a\":1}\n  \n-- gemkit --\n-- events --\nfocus /a\n"
	path := filepath.Join(t.TempDir(), "case.txtar")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	a := ReadArchive(t, path)
	if a.Comment != "What the case shows.\n" || a.Get("editor") != "{\"a\":1}\n  \n" || a.Get("gemkit") != "" || a.Get("missing") != "" {
		t.Fatalf("parsed %+v", a)
	}
	if got := string(a.Format()); got != text {
		t.Errorf("Format = %q, want the file unchanged %q", got, text)
	}
	a.Set("gemkit", "{}\n")
	a.Set("notes", "new\n")
	Check(t, filepath.Join("testdata", "set.txtar"), a.Format())
}

// TestPlay: a transcript's sections are played in order; what a step
// returns goes into the section after it, or into its own; an answer
// with no section to show it, and a section of no step, fail.
func TestPlay(t *testing.T) {
	var did []string
	steps := map[string]Step{
		"args":         {},
		"send":         {Do: func(d string) string { did = append(did, "send "+d); return "got " + d }, Shown: "receive"},
		"editor":       {Do: func(d string) string { did = append(did, "editor "+d); return "" }},
		"notification": {Do: func(string) string { return "note\n" }, Shown: Here},
	}
	a := &Archive{Sections: []Section{{"args", "-v\n"}, {"send", "a\n"}, {"receive", "old\n"}, {"editor", "focus\n"}, {"notification", ""}}}
	a.Play(t, steps)
	if want := []string{"send a\n", "editor focus\n"}; !slices.Equal(did, want) {
		t.Errorf("played %q, want %q", did, want)
	}
	if got := a.Get("receive") + a.Get("notification") + a.Get("args"); got != "got a\nnote\n-v\n" {
		t.Errorf("shown %q", got)
	}
	for _, c := range []struct {
		name     string
		sections []Section
		want     string
	}{
		{"answer with nowhere to show it", []Section{{"send", "b\n"}}, "has no receive section after it"},
		{"unknown section", []Section{{"sned", "b\n"}}, `unknown section "sned"`},
	} {
		ft := &failT{TB: t}
		func() {
			defer func() { _ = recover() }()
			(&Archive{Sections: c.sections}).Play(ft, steps)
		}()
		if !strings.Contains(ft.msg, c.want) {
			t.Errorf("%s: failed with %q, want %q", c.name, ft.msg, c.want)
		}
	}
}

// failT records a test's failure; Fatalf panics, as it stops the test.
type failT struct {
	testing.TB
	msg string
}

func (f *failT) Helper()                           {}
func (f *failT) Errorf(format string, args ...any) { f.msg += fmt.Sprintf(format, args...) }
func (f *failT) Fatalf(format string, args ...any) {
	f.msg += fmt.Sprintf(format, args...)
	panic(f)
}
