package disclosure

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// skillSet loads a home with the analyzer and the reviewer (three skills
// and a SKILL.md that is not one); before and after, if given, change the
// reviewer's files before and after the Set is loaded.
func skillSet(t *testing.T, before, after func(dir string)) *Set {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	os.MkdirAll(ws, 0o755)
	writeExt(t, home, analyzer, copyFiles(analyzerFiles))
	writeExt(t, home, reviewer, copyFiles(reviewerFiles))
	dir := filepath.Join(home, ".gemini", "extensions", "reviewer")
	if before != nil {
		before(dir)
	}
	set, err := Load(extension.OpenStore(home).WithWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	if after != nil {
		after(dir)
	}
	return set
}

// TestSkillsInSummary checks where skills appear in the summary and how
// the budget cuts them: listed with one-line descriptions, then by name
// only, then with their extension.
func TestSkillsInSummary(t *testing.T) {
	set := skillSet(t, nil, nil)
	for _, c := range []struct {
		name    string
		budget  int
		want    []string
		notWant []string
		omitted *Omitted
	}{
		{"listed", 0, []string{SkillsHeader, "  - **Skills**:\n    - `house-style`: The team's writing style",
			"    - `code-review`: Review a change for correctness, tests and style. Use it when asked to review a diff or a pull request.\n"},
			[]string{"Left out", "broken", "Read the diff"}, nil},
		{"descriptions cut last", 1040, []string{SkillsHeader, "  - **Skills**: `house-style`, `code-review`, `release`\n", "the skills' descriptions"},
			[]string{"Review a change"}, &Omitted{Examples: true, Descriptions: true, Signatures: true, SkillDescriptions: true}},
		{"cut with their extension", 790, []string{"1 more extension (reviewer)"},
			[]string{SkillsHeader, "**Skills**"}, &Omitted{Examples: true, Descriptions: true, Signatures: true, SkillDescriptions: true, Extensions: []string{"reviewer"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := set.Summary(c.budget)
			if runes(sum.Text) > sum.Budget {
				t.Errorf("%d characters, over the budget of %d", runes(sum.Text), sum.Budget)
			}
			for _, w := range c.want {
				if !strings.Contains(sum.Text, w) {
					t.Errorf("the summary lacks %q:\n%s", w, sum.Text)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(sum.Text, w) {
					t.Errorf("the summary has %q:\n%s", w, sum.Text)
				}
			}
			if got, want := indentJSON(t, sum.Omitted), indentJSON(t, c.omitted); string(got) != string(want) {
				t.Errorf("omitted %s, want %s", got, want)
			}
		})
	}
}

// TestReadSkill reads skills through read_doc, as a model does, and
// checks what it is told when a skill cannot be read.
func TestReadSkill(t *testing.T) {
	for _, c := range []struct {
		name    string
		before  func(dir string)
		edit    func(dir string)
		ext     string
		doc     string
		isError bool
		want    string
	}{
		{name: "body without front matter", ext: "reviewer", doc: "skill:code-review", want: "# Code review\n\nRead the diff, then the tests."},
		{name: "top-level SKILL.md, name sanitised", ext: "reviewer", doc: "skill:house-style", want: "Write short sentences."},
		{name: "name in another case", ext: "reviewer", doc: "skill:Code-Review", want: "# Code review"},
		{name: "a doc still reads as before", ext: "reviewer", doc: "checklist", want: "- tests\n"},
		{name: "unknown skill", ext: "reviewer", doc: "skill:nope", isError: true,
			want: `extension reviewer has no skill "nope"; its skills: house-style, code-review, release; skills/broken/SKILL.md is not a skill because it does not open with a front matter block`},
		{name: "malformed SKILL.md", ext: "reviewer", doc: "skill:broken", isError: true,
			want: `extension reviewer has no skill "broken": skills/broken/SKILL.md is not a skill because it does not open with a front matter block`},
		{name: "no description", ext: "reviewer", doc: "skill:broken", isError: true,
			before: func(dir string) { write(t, dir, "skills/broken/SKILL.md", "---\nname: broken\n---\nbody\n") },
			want:   "skills/broken/SKILL.md is not a skill because its front matter has no description"},
		{name: "deleted after it was listed", ext: "reviewer", doc: "skill:code-review", isError: true,
			edit: func(dir string) { os.Remove(filepath.Join(dir, "skills", "code-review", "SKILL.md")) },
			want: "skill code-review of extension reviewer cannot be read: its file skills/code-review/SKILL.md is missing"},
		{name: "front matter broken after it was listed", ext: "reviewer", doc: "skill:code-review", isError: true,
			edit: func(dir string) { write(t, dir, "skills/code-review/SKILL.md", "---\nname: code-review\n---\nbody\n") },
			want: "its SKILL.md is no longer a skill: its front matter has no description"},
		{name: "too large", ext: "reviewer", doc: "skill:release", isError: true,
			edit: func(dir string) {
				write(t, dir, "skills/release/SKILL.md", "---\nname: release\ndescription: d\n---\n"+strings.Repeat("x", extension.MaxSkillBytes))
			},
			want: "larger than 1048576 bytes and is not loaded"},
		{name: "not UTF-8", ext: "reviewer", doc: "skill:release", isError: true,
			edit: func(dir string) {
				write(t, dir, "skills/release/SKILL.md", "---\nname: release\ndescription: d\n---\n\xff\xfe\n")
			},
			want: "its SKILL.md is not UTF-8 text"},
		{name: "empty body", ext: "reviewer", doc: "skill:release",
			edit: func(dir string) {
				write(t, dir, "skills/release/SKILL.md", "---\nname: release\ndescription: d\n---\n")
			},
			want: "(skill:release of extension reviewer is empty.)"},
		{name: "unknown doc lists the skills", ext: "reviewer", doc: "review", isError: true,
			want: `extension reviewer has no doc "review"; its docs: checklist; its skills: skill:house-style, skill:code-review, skill:release`},
		{name: "name with control characters and backquotes", ext: "reviewer", doc: "skill:a 'b' c",
			before: func(dir string) {
				os.MkdirAll(filepath.Join(dir, "skills", "odd"), 0o755)
				write(t, dir, "skills/odd/SKILL.md", "---\nname: \"a\\t`b`\\nc\"\ndescription: d\n---\nodd body\n")
			},
			want: "odd body"},
		{name: "extension without skills", ext: "code-analyzer", doc: "skill:code-review", isError: true,
			want: `extension code-analyzer has no skill "code-review"; it has no skills`},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := skillSet(t, c.before, c.edit)
			args, _ := json.Marshal(map[string]string{"extension": c.ext, "name": c.doc})
			res := set.Call(context.Background(), &toolrun.Runner{}, ReadDocTool, args, Limits{})
			if res.IsError != c.isError || !strings.Contains(res.Text, c.want) {
				t.Errorf("read_doc %s %s: isError %v, text %q; want isError %v and %q", c.ext, c.doc, res.IsError, res.Text, c.isError, c.want)
			}
		})
	}
}

// TestSkillRefs checks that skills are listed beside docs, under the
// names read_doc takes, and that only SKILL.md files with a name and a
// description count, as in Gemini CLI.
func TestSkillRefs(t *testing.T) {
	set := skillSet(t, nil, nil)
	var got []string
	for _, d := range set.DocRefs() {
		got = append(got, d.Extension+"/"+d.Name+" "+d.MIMEType)
	}
	want := "code-analyzer/linter-rules text/markdown reviewer/checklist text/markdown reviewer/skill:house-style text/markdown " +
		"reviewer/skill:code-review text/markdown reviewer/skill:release text/markdown"
	if strings.Join(got, " ") != want {
		t.Errorf("doc refs %q, want %q", strings.Join(got, " "), want)
	}
	e := set.Extension("reviewer")
	if len(e.SkippedSkills) != 1 || !strings.HasSuffix(e.SkippedSkills[0].Location, filepath.Join("broken", "SKILL.md")) {
		t.Errorf("skipped skills %+v", e.SkippedSkills)
	}
}

func write(t *testing.T, dir, rel, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStampSeesSkills checks that a server reloads when a skill is added
// or its SKILL.md is edited.
func TestStampSeesSkills(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	os.MkdirAll(ws, 0o755)
	writeExt(t, home, reviewer, copyFiles(reviewerFiles))
	dir := filepath.Join(home, ".gemini", "extensions", "reviewer")
	src := StoreSource(extension.OpenStore(home).WithWorkspace(ws))
	set, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	last := src.Stamp(set)
	for _, c := range []struct {
		name string
		edit func()
	}{
		{"a skill added", func() {
			os.MkdirAll(filepath.Join(dir, "skills", "new"), 0o755)
			write(t, dir, "skills/new/SKILL.md", "---\nname: new\ndescription: d\n---\n")
		}},
		{"a SKILL.md edited", func() {
			write(t, dir, "skills/code-review/SKILL.md", "---\nname: code-review\ndescription: Review.\n---\nShorter.\n")
		}},
		{"a SKILL.md removed", func() { os.Remove(filepath.Join(dir, "skills", "release", "SKILL.md")) }},
	} {
		c.edit()
		now := src.Stamp(set)
		if now == last {
			t.Errorf("%s: the stamp did not change", c.name)
		}
		last = now
	}
}
