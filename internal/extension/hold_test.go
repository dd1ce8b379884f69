package extension

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHoldInGemini: a hold disables the extension in every folder under
// each of its names, after the person's own rules, and its release takes
// out exactly what it added: the person's rules stay, a rule of theirs
// that was already "!/*" stays, and a file made for the hold goes.
func TestHoldInGemini(t *testing.T) {
	home := t.TempDir()
	st := OpenStore(home)
	os.MkdirAll(st.Dir(), 0o755)
	if _, err := st.HoldInGemini("notes", []string{"notes", "renamed"}, "changed"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"notes", "renamed"} {
		for _, dir := range []string{home, "/", "/work/elsewhere"} {
			if enabledIn(mustCfg(t, st, n), dir) {
				t.Errorf("%s is enabled in %s while held", n, dir)
			}
		}
	}
	if _, err := st.ReleaseInGemini("notes"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.enablementPath()); !os.IsNotExist(err) {
		t.Errorf("the enablement file made for the hold is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".gemini", "gemkit", holdsFile)); !os.IsNotExist(err) {
		t.Errorf("the holds file is left: %v", err)
	}

	// The person's own rules: an enable in their home, and another
	// extension's "!/*" written by them.
	mine := `{"notes": {"overrides": ["` + slashed(home) + `*"]}, "other": {"overrides": ["!/*"]}}`
	os.WriteFile(st.enablementPath(), []byte(mine), 0o644)
	if _, err := st.HoldInGemini("notes", []string{"other"}, "changed"); err != nil {
		t.Fatal(err)
	}
	if enabledIn(mustCfg(t, st, "notes"), home) {
		t.Error("held, notes is still enabled in the home folder by the person's rule before it")
	}
	if hs, _ := st.Holds(); len(hs["notes"].Added) != 1 || hs["notes"].Added[0] != "notes" {
		t.Errorf("added %v, want notes alone (other's rule is the person's)", hs["notes"].Added)
	}
	st.ReleaseInGemini("notes")
	f, _ := st.readEnablement()
	if got := f["notes"].Overrides; len(got) != 1 || got[0] != slashed(home)+"*" {
		t.Errorf("notes' rules after the release: %v", got)
	}
	if got := f["other"].Overrides; len(got) != 1 || got[0] != "!/*" {
		t.Errorf("other's rules after the release: %v", got)
	}
}

func mustCfg(t *testing.T, st *Store, name string) *enablementConfig {
	t.Helper()
	f, err := st.readEnablement()
	if err != nil {
		t.Fatal(err)
	}
	return f[name]
}

// TestHoldIsNotThePersons: gemkit reads a held extension's enablement as
// the person wrote it (the hold keeps Gemini CLI from running it; gemkit
// tells in its place why it runs none of it), while a "!/*" the person
// wrote stays theirs.
func TestHoldIsNotThePersons(t *testing.T) {
	home := t.TempDir()
	st := OpenStore(home)
	os.MkdirAll(st.Dir(), 0o755)
	os.WriteFile(st.enablementPath(), []byte(`{"other": {"overrides": ["!/*"]}}`), 0o644)
	if _, err := st.HoldInGemini("notes", []string{"other"}, "changed"); err != nil {
		t.Fatal(err)
	}
	if enabledIn(mustCfg(t, st, "notes"), home) {
		t.Fatal("the hold did not disable notes in Gemini CLI's file")
	}
	e, err := st.Enablement("notes")
	if err != nil || !e.User || !e.Workspace {
		t.Errorf("gemkit reads the held notes as %+v %v, want enabled as the person left it", e, err)
	}
	lookup, _ := st.Enablements()
	if e := lookup("notes"); !e.Workspace {
		t.Errorf("Enablements reads the held notes as %+v", e)
	}
	if e := lookup("other"); e.Workspace || e.User {
		t.Errorf("the person's own \"!/*\" of other reads as %+v", e)
	}
}
