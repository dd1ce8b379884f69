package golden

import (
	"os"
	"path/filepath"
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
