package extview

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestUpdaters: which tools can update an install, by its source.
func TestUpdaters(t *testing.T) {
	cases := []struct {
		md   *extension.InstallMetadata
		want string
	}{
		{&extension.InstallMetadata{Type: extension.SourceGit, Source: "file:///r"}, "gemkit gemini"},
		{&extension.InstallMetadata{Type: extension.SourceLocal, Source: "/r"}, "gemkit gemini"},
		{&extension.InstallMetadata{Type: extension.SourceGit, Source: "https://h/r", Subdir: "ext"}, "gemkit"},
		{&extension.InstallMetadata{Type: extension.SourceGitHubRelease, Source: "o/r"}, "gemini"},
		{nil, ""},
	}
	for _, c := range cases {
		got, note := Updaters(c.md)
		if strings.Join(got, " ") != c.want || (len(got) < 2) != (note != "") {
			t.Errorf("Updaters(%+v) = %v, %q", c.md, got, note)
		}
	}
}
