// Package golden compares test output with files checked in under
// testdata, and rewrites those files when the tests run with -update:
//
//	go test ./internal/cli -update
//
// It also reads and writes txtar archives (a comment, then named
// sections), the form of the executable transcripts, so that the txtar
// API stays behind this one package.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files and the expectations of the transcripts")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the file at path. With -update it first writes
// got to path (creating its folder), so the comparison passes and the
// change shows up in git diff.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the test got (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Archive is a txtar file: a comment, then sections, each a name and its
// lines.
type Archive struct {
	Comment  string
	Sections []Section
}

// Section is one named part of an Archive.
type Section struct {
	Name string
	Data string
}

// ReadArchive reads the txtar file at path.
func ReadArchive(t testing.TB, path string) *Archive {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &Archive{Comment: string(ar.Comment)}
	for _, f := range ar.Files {
		a.Sections = append(a.Sections, Section{Name: f.Name, Data: string(f.Data)})
	}
	return a
}

// Get returns the data of the section name, or "" if there is none.
func (a *Archive) Get(name string) string {
	for _, s := range a.Sections {
		if s.Name == name {
			return s.Data
		}
	}
	return ""
}

// Set replaces the data of the section name, or adds the section at the
// end.
func (a *Archive) Set(name, data string) {
	for i := range a.Sections {
		if a.Sections[i].Name == name {
			a.Sections[i].Data = data
			return
		}
	}
	a.Sections = append(a.Sections, Section{Name: name, Data: data})
}

// Format returns the archive in txtar form.
func (a *Archive) Format() []byte {
	ar := &txtar.Archive{Comment: []byte(a.Comment)}
	for _, s := range a.Sections {
		ar.Files = append(ar.Files, txtar.File{Name: s.Name, Data: []byte(s.Data)})
	}
	return txtar.Format(ar)
}

// Transcripts plays every transcript in dir (*.txtar), each in a
// parallel subtest named for its file: play runs the case and sets the
// sections it answers, then the file is checked against what it now
// holds (go test -update rewrites it). Every case must open with a prose
// line saying what it shows. It is the one loop of the conformance
// transcripts (the editor protocol's, the language requests', the
// companion's wire, Claude Code's endpoint).
func Transcripts(t *testing.T, dir string, play func(t *testing.T, a *Archive)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s (%v)", dir, err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			a := ReadArchive(t, path)
			if strings.TrimSpace(a.Comment) == "" {
				t.Errorf("%s: no prose line saying what the case shows", path)
			}
			play(t, a)
			Check(t, path, a.Format())
		})
	}
}

// Step is what a transcript's section of one name does when it is
// played in order (Archive.Play): Do acts on the section's data (a
// request sent, what the person does) and returns what came of it, and
// Shown says where that is written: in the section named Shown, which
// must come right after this one (a request's response); in this
// section itself (Here: the next notification); or nowhere ("", and Do
// must return "").
type Step struct {
	Do    func(data string) string
	Shown string
}

// Here is Step.Shown for a section that shows what came in itself.
const Here = "."

// Play plays a's sections in order by the steps of their names. A
// section that shows what came of the one before it (some step's Shown)
// is passed over, as is one whose step has no Do (read by the case
// itself, such as its arguments); a section of another name fails the
// test, and so does an answer with no section after it to show it.
func (a *Archive) Play(t testing.TB, steps map[string]Step) {
	t.Helper()
	shown := map[string]bool{}
	for _, st := range steps {
		if st.Shown != "" && st.Shown != Here {
			shown[st.Shown] = true
		}
	}
	for i, sec := range a.Sections {
		st, ok := steps[sec.Name]
		switch {
		case !ok && shown[sec.Name]:
			continue
		case !ok:
			t.Fatalf("section %d: unknown section %q", i, sec.Name)
		case st.Do == nil:
			continue
		}
		got := st.Do(sec.Data)
		switch {
		case st.Shown == Here:
			a.Sections[i].Data = got
		case st.Shown != "" && i+1 < len(a.Sections) && a.Sections[i+1].Name == st.Shown:
			a.Sections[i+1].Data = got
		case got != "":
			t.Errorf("section %d (%s): what came has no %s section after it to show it:\n%s", i, sec.Name, st.Shown, got)
		}
	}
}
