package extension

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/fsutil"
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
// silently. They are read through the extension's Root: a SKILL.md (or
// a skill's folder) that is a link out of the extension is skipped with
// why, never read.
func (e *Extension) ScanSkills() (skills []Skill, skipped []SkippedSkill) {
	root, err := e.Root()
	if err != nil {
		return []Skill{}, nil
	}
	defer root.Close()
	if e.IsPlugin() {
		return scanPluginSkills(root, e.Plugin)
	}
	return scanSkills(root)
}

// scanSkills is ScanSkills of the extension folder open as root.
func scanSkills(root *fsutil.Root) (skills []Skill, skipped []SkippedSkill) {
	skills = []Skill{}
	top := filepath.Join("skills", "SKILL.md")
	var files []string
	entries, err := root.ReadDir("skills")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No skills folder (most extensions): nothing more to look at.
		return skills, nil
	case err != nil:
		// A folder that cannot be listed may still hold SKILL.md.
		if _, err := root.Lstat(top); err == nil {
			files = append(files, top)
		}
	}
	for _, d := range entries {
		if d.Name() == "SKILL.md" {
			files = append(files, top)
		}
		// Like a glob of skills/*/SKILL.md: folders, and links to them.
		if !d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			continue
		}
		f := filepath.Join("skills", d.Name(), "SKILL.md")
		if _, err := root.Lstat(f); err == nil || errors.Is(err, fsutil.ErrOutside) {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		sk, why := readSkillFile(root, f)
		if why != "" {
			skipped = append(skipped, SkippedSkill{Location: root.Path(f), Reason: why})
			continue
		}
		skills = append(skills, sk)
	}
	return skills, skipped
}

// readSkillFile reads one SKILL.md's name and description, or says why
// it is not a skill.
func readSkillFile(root *fsutil.Root, rel string) (Skill, string) {
	data, err := root.ReadFile(rel, MaxSkillBytes)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return Skill{}, "it is not a regular file"
	}
	if err != nil {
		return Skill{}, "it cannot be read: " + err.Error()
	}
	return skillFromData(root.Path(rel), data)
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
var skillBody = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^---\r?\n[\s\S]*?\r?\n---(?:\r?\n([\s\S]*))?`) })

// ReadSkillBody reads a skill's instructions: its SKILL.md after the
// front matter, with surrounding white space trimmed, which is what
// Gemini CLI hands its model when the skill is activated. location is
// the skill's Location, a file in the extension's folder read through
// its Root. The file must be a regular file of at most MaxSkillBytes of
// UTF-8 text, and must still be a skill (it may have changed since it
// was listed). A missing file gives an error that wraps fs.ErrNotExist.
func (e *Extension) ReadSkillBody(location string) (string, error) {
	rel, err := fsutil.NameIn(e.Dir, location)
	if err != nil {
		return "", err
	}
	root, err := e.Root()
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := root.ReadFile(rel, MaxSkillBytes)
	switch {
	case errors.Is(err, fsutil.ErrNotRegular):
		return "", errors.New("its SKILL.md is not a regular file")
	case errors.Is(err, fsutil.ErrTooLarge):
		return "", fmt.Errorf("its SKILL.md is larger than %d bytes and is not loaded", MaxSkillBytes)
	case err != nil:
		return "", err
	}
	if !utf8.Valid(data) {
		return "", errors.New("its SKILL.md is not UTF-8 text")
	}
	if _, why := skillFromData(location, data); why != "" {
		return "", fmt.Errorf("its SKILL.md is no longer a skill: %s", why)
	}
	m := skillBody().FindSubmatch(data)
	if m == nil {
		return "", errors.New("its SKILL.md has no front matter")
	}
	return string(bytes.TrimSpace(m[1])), nil
}
