package extension

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
)

// readsCase is one manifest of testdata/geminireads: its comment says
// whether Gemini CLI 0.61 installs it ("gemini: installs" or
// "gemini: refuses"), whether gemkit does when it differs ("gemkit:"),
// and the problems gemkit finds, path=effect, sorted ("none"; "error"
// for a text JSON.parse refuses).
type readsCase struct {
	gemini, gemkit, problems string
}

func readCase(t *testing.T, comment string) readsCase {
	t.Helper()
	var c readsCase
	for line := range strings.Lines(comment) {
		key, val, _ := strings.Cut(strings.TrimSpace(line), ": ")
		switch key {
		case "gemini":
			c.gemini = val
		case "gemkit":
			c.gemkit = val
		case "problems":
			c.problems = val
		}
	}
	if c.gemkit == "" {
		c.gemkit = c.gemini
	}
	if c.gemini != "installs" && c.gemini != "refuses" || c.problems == "" {
		t.Fatalf("the case says neither what Gemini CLI does nor the problems:\n%s", comment)
	}
	return c
}

// TestInstallsWhatGeminiCLIInstalls: each manifest of
// testdata/geminireads is installed by gemkit when Gemini CLI 0.61
// installs it (a key Gemini CLI ignores, a field of its own of an odd
// shape, a problem only in gemkit's tools), and refused when Gemini CLI
// refuses it, but for what gemkit cannot see (servers given as a list),
// with the problems and effects the case lists.
// TestGeminiCLIInstallsAlike (internal/cli) holds every case to the
// real Gemini CLI.
func TestInstallsWhatGeminiCLIInstalls(t *testing.T) {
	paths, err := filepath.Glob("testdata/geminireads/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	s := newStore(t)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar := golden.ReadArchive(t, path)
			c := readCase(t, ar.Comment)
			src := t.TempDir()
			files := map[string]string{}
			for _, sec := range ar.Sections {
				files[sec.Name] = sec.Data
			}
			writeTree(t, src, files)
			ext, err := Load(src)
			var ve *ValidationError
			switch {
			case c.problems == "error":
				if err == nil || errors.As(err, &ve) {
					t.Fatalf("Load: %v, want an error", err)
				}
			case err != nil && !errors.As(err, &ve):
				t.Fatalf("Load: %v", err)
			default:
				var got []string
				for _, p := range ext.Problems {
					got = append(got, p.Path+"="+string(p.Effect))
				}
				slices.Sort(got)
				if len(got) == 0 {
					got = []string{"none"}
				}
				if strings.Join(got, " ") != c.problems {
					t.Errorf("problems %s, want %s\n%v", strings.Join(got, " "), c.problems, ext.Problems)
				}
			}
			in, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes})
			switch {
			case c.gemkit == "installs" && err != nil:
				t.Fatalf("install refused: %v", err)
			case c.gemkit == "refuses" && err == nil:
				t.Fatalf("install of a manifest to refuse went on")
			case err == nil:
				must(t, s.Uninstall(in.Name))
			}
		})
	}
}
