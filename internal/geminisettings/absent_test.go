package geminisettings

import (
	"os"
	"path/filepath"
	"testing"
)

// TestApplyNothingToAbsent: an edit that adds and removes nothing
// leaves an absent settings file absent, without an error (the switch
// of an Agent Plugins plugin takes nothing from Gemini CLI).
func TestApplyNothingToAbsent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	for _, e := range []Edit{{}, {Include: []string{"x"}, Enable: []string{"y"}, RemoveHooks: []string{"z"}, Drop: []string{KeyFile}}} {
		res, err := Apply(path, e)
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%+v made the file (%v), %+v", e, err, res)
		}
	}
}
