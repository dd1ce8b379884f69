package extension

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanSkills checks which SKILL.md files are skills and the words
// for those that are not.
func TestScanSkills(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"skills/SKILL.md":          "---\nname: top\ndescription: At the top.\n---\n",
		"skills/a/SKILL.md":        "---\nname: \"a:b\"\ndescription: A.\n---\nbody\n",
		"skills/no-fm/SKILL.md":    "just text\n",
		"skills/no-name/SKILL.md":  "---\ndescription: d\n---\n",
		"skills/no-desc/SKILL.md":  "---\nname: n\n---\n",
		"skills/deep/x/SKILL.md":   "---\nname: deep\ndescription: too deep for Gemini CLI\n---\n",
		"skills/other/README.md":   "---\nname: r\ndescription: not a SKILL.md\n---\n",
		"skills/dir-md/SKILL.md/x": "a folder called SKILL.md",
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	skills, skipped := (&Extension{Dir: dir}).ScanSkills()
	var got []string
	for _, s := range skills {
		got = append(got, s.Name)
	}
	if strings.Join(got, " ") != "top a-b" {
		t.Errorf("skills %q, want top a-b", got)
	}
	want := map[string]string{
		"dir-md":  "it is not a regular file",
		"no-desc": "its front matter has no description",
		"no-fm":   "it does not open with a front matter block",
		"no-name": "its front matter has no name",
	}
	if len(skipped) != len(want) {
		t.Errorf("skipped %+v", skipped)
	}
	for _, s := range skipped {
		w := want[filepath.Base(filepath.Dir(s.Location))]
		if w == "" || !strings.HasPrefix(s.Reason, w) {
			t.Errorf("%s skipped because %q, want %q", s.Location, s.Reason, w)
		}
	}
}

// TestReadSkillBody checks that the body is the text after the front
// matter, trimmed, and the bounds.
func TestReadSkillBody(t *testing.T) {
	for _, c := range []struct {
		name, text, want, err string
	}{
		{"body", "---\nname: a\ndescription: d\n---\n\n# A\n\nDo it.\n\n", "# A\n\nDo it.", ""},
		{"CRLF", "---\r\nname: a\r\ndescription: d\r\n---\r\nline\r\n", "line", ""},
		{"no body", "---\nname: a\ndescription: d\n---", "", ""},
		{"dashes in the body", "---\nname: a\ndescription: d\n---\nx\n---\ny\n", "x\n---\ny", ""},
		{"lost its description", "---\nname: a\n---\nbody\n", "", "no longer a skill: its front matter has no description"},
		{"not UTF-8", "---\nname: a\ndescription: d\n---\n\xff\n", "", "not UTF-8 text"},
		{"too large", "---\nname: a\ndescription: d\n---\n" + strings.Repeat("x", MaxSkillBytes), "", "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "SKILL.md")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := (&Extension{Dir: dir}).ReadSkillBody(p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("body %q, %v; want %q", got, err, c.want)
			}
		})
	}
	dir := t.TempDir()
	if _, err := (&Extension{Dir: dir}).ReadSkillBody(filepath.Join(dir, "SKILL.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
