package extension

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"unicode/utf8"
)

// MaxSkillBytes is the largest SKILL.md whose body is read for a model;
// a bigger one is refused rather than cut.
const MaxSkillBytes = 1 << 20

// SkippedSkill is a SKILL.md under skills/ that is not an agent skill,
// with why in words, so that a person (and a model asking for it) can
// tell why it is missing from the list.
type SkippedSkill struct {
	// Location is the SKILL.md file.
	Location string `json:"location"`
	Reason   string `json:"reason"`
}

// ScanSkills reads skills/SKILL.md and skills/*/SKILL.md, the files
// Gemini CLI 0.61 loads an extension's skills from: those with a name
// and a description in their front matter are skills (sorted by file),
// the others are skipped with why. Gemini CLI skips the same files,
// silently.
func (e *Extension) ScanSkills() (skills []Skill, skipped []SkippedSkill) {
	root := filepath.Join(e.Dir, "skills")
	files, _ := filepath.Glob(filepath.Join(root, "SKILL.md"))
	more, _ := filepath.Glob(filepath.Join(root, "*", "SKILL.md"))
	files = append(files, more...)
	sort.Strings(files)
	skills = []Skill{}
	for _, f := range files {
		sk, why := readSkillFile(f)
		if why != "" {
			skipped = append(skipped, SkippedSkill{Location: f, Reason: why})
			continue
		}
		skills = append(skills, sk)
	}
	return skills, skipped
}

// readSkillFile reads one SKILL.md's name and description, or says why
// it is not a skill.
func readSkillFile(path string) (Skill, string) {
	fi, err := os.Stat(path)
	if err != nil {
		return Skill{}, "it cannot be read: " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return Skill{}, "it is not a regular file"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Skill{}, "it cannot be read: " + err.Error()
	}
	return skillFromData(path, data)
}

func skillFromData(path string, data []byte) (Skill, string) {
	fields, found := frontMatterFields(data)
	if !found {
		return Skill{}, "it does not open with a front matter block (a line ---, then name: and description: lines, then a line ---)"
	}
	name, hasName := fields["name"]
	desc, hasDesc := fields["description"]
	switch {
	case !hasName || name == "":
		return Skill{}, "its front matter has no name"
	case !hasDesc:
		return Skill{}, "its front matter has no description"
	}
	return Skill{Name: skillNameReplacer.Replace(name), Description: desc, Location: path}, ""
}

// skillBody matches the front matter and captures what follows it, as
// Gemini CLI splits a SKILL.md.
var skillBody = regexp.MustCompile(`^---\r?\n[\s\S]*?\r?\n---(?:\r?\n([\s\S]*))?`)

// ReadSkillBody reads a skill's instructions: its SKILL.md after the
// front matter, with surrounding white space trimmed, which is what
// Gemini CLI hands its model when the skill is activated. The file must
// be a regular file of at most MaxSkillBytes of UTF-8 text, and must
// still be a skill (it may have changed since it was listed). A missing
// file gives an error that wraps fs.ErrNotExist.
func ReadSkillBody(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("its SKILL.md is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSkillBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > MaxSkillBytes {
		return "", fmt.Errorf("its SKILL.md is larger than %d bytes and is not loaded", MaxSkillBytes)
	}
	if !utf8.Valid(data) {
		return "", errors.New("its SKILL.md is not UTF-8 text")
	}
	if _, why := skillFromData(path, data); why != "" {
		return "", fmt.Errorf("its SKILL.md is no longer a skill: %s", why)
	}
	m := skillBody.FindSubmatch(data)
	if m == nil {
		return "", errors.New("its SKILL.md has no front matter")
	}
	return string(bytes.TrimSpace(m[1])), nil
}
