package apikey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveRead stores a key 0600 in a folder made 0700, reads it back,
// and refuses, in words, a file others may read or one that is no key.
func TestSaveRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gemkit")
	if err := Save(dir, "AIzaTestKey_123-abc"); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, Path(dir): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v", path, fi.Mode(), err)
		}
	}
	if k, err := Read(dir); err != nil || k != "AIzaTestKey_123-abc" {
		t.Fatalf("Read: %q %v", k, err)
	}
	os.Chmod(Path(dir), 0o644)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "may be read by others") {
		t.Errorf("a key others may read: %v", err)
	}
	os.WriteFile(Path(dir), []byte("two words\n"), 0o600)
	os.Chmod(Path(dir), 0o600)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "is not a key") {
		t.Errorf("a file that is no key: %v", err)
	}
	if had, err := Remove(dir); !had || err != nil {
		t.Errorf("Remove: %v %v", had, err)
	}
	if had, err := Remove(dir); had || err != nil {
		t.Errorf("Remove again: %v %v", had, err)
	}
	if k, err := Read(dir); k != "" || err != nil {
		t.Errorf("Read with none stored: %q %v", k, err)
	}
}

func TestCheck(t *testing.T) {
	for key, ok := range map[string]bool{
		"AIzaSyA-abc_123":        true,
		"":                       false,
		"with space":             false,
		"tab\there":              false,
		"newline\nkey":           false,
		"clé":                    false,
		strings.Repeat("k", 513): false,
	} {
		if err := Check(key); (err == nil) != ok {
			t.Errorf("Check(%q) = %v", key, err)
		}
	}
}

// TestGetenv: the environment's GEMINI_API_KEY or GOOGLE_API_KEY wins;
// the stored key stands in only for GEMINI_API_KEY, only when neither is
// set; a stored key that cannot be read is reported and not used.
func TestGetenv(t *testing.T) {
	dir := t.TempDir()
	Save(dir, "stored")
	for _, tc := range []struct {
		env  map[string]string
		name string
		want string
	}{
		{nil, "GEMINI_API_KEY", "stored"},
		{map[string]string{"GEMINI_API_KEY": "env"}, "GEMINI_API_KEY", "env"},
		{map[string]string{"GOOGLE_API_KEY": "g"}, "GEMINI_API_KEY", ""},
		{nil, "OPENAI_API_KEY", ""},
	} {
		get := Getenv(func(k string) string { return tc.env[k] }, dir, nil)
		if got := get(tc.name); got != tc.want {
			t.Errorf("%v: %s = %q, want %q", tc.env, tc.name, got, tc.want)
		}
	}
	os.Chmod(Path(dir), 0o640)
	var reported error
	if got := Getenv(func(string) string { return "" }, dir, func(err error) { reported = err })("GEMINI_API_KEY"); got != "" || reported == nil {
		t.Errorf("a key others may read: %q, reported %v", got, reported)
	}
}
