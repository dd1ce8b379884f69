package disclosure

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// SkillPrefix starts the name read_doc takes for an agent skill's
// instructions: {extension, name: "skill:NAME"}. A doc of the extension
// whose own name is the same wins, so existing doc names keep working.
const SkillPrefix = "skill:"

// readSkill reads the instructions of e's skill called name: its
// SKILL.md without the front matter, as Gemini CLI gives its model when
// it activates a skill. Like Gemini CLI it matches the name regardless of
// case when no skill has it exactly. The file is held to the same bounds
// as a doc.
func (s *Set) readSkill(e *Extension, name string) (*Doc, error) {
	sk := e.skill(name)
	if sk == nil {
		return nil, &DocError{e.noSkill(name)}
	}
	fail := func(why string) error {
		return &DocError{fmt.Sprintf("skill %s of extension %s cannot be read: %s", SkillName(*sk), e.Name, why)}
	}
	rel := e.rel(sk.Location)
	root, err := e.Ext.Root()
	if err != nil {
		return nil, fail(err.Error())
	}
	file, err := fsutil.NameIn(e.Ext.Dir, sk.Location)
	if err == nil {
		file, err = resolveIn(root, file)
	}
	root.Close()
	if err != nil {
		if strings.Contains(err.Error(), "missing") {
			return nil, fail("its file " + rel + " is missing")
		}
		return nil, fail(err.Error())
	}
	path := filepath.Join(e.Ext.Dir, file)
	body, err := e.Ext.ReadSkillBody(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fail("its file " + rel + " is missing")
	}
	if err != nil {
		return nil, fail(err.Error())
	}
	return &Doc{Extension: e.Name, Name: SkillPrefix + SkillName(*sk), Description: SkillLine(sk.Description), Path: path, MIMEType: "text/markdown", Text: body}, nil
}

// skill finds a skill by the name a model is shown, exactly or else
// regardless of case.
func (e *Extension) skill(name string) *extension.Skill {
	for i := range e.Skills {
		if SkillName(e.Skills[i]) == name {
			return &e.Skills[i]
		}
	}
	for i := range e.Skills {
		if strings.EqualFold(SkillName(e.Skills[i]), name) {
			return &e.Skills[i]
		}
	}
	return nil
}

// SkillName is a skill's name as a model is shown it and gives it back:
// on one line, without control characters (a quoted YAML name may hold
// them) and without backquotes, which would break the summary's quoting.
func SkillName(sk extension.Skill) string {
	return strings.ReplaceAll(oneLine(sk.Name), "`", "'")
}

// noSkill says that e has no skill called name, and why when a SKILL.md
// in a folder of that name is not a skill.
func (e *Extension) noSkill(name string) string {
	msg := fmt.Sprintf("extension %s has no skill %q", e.Name, name)
	for _, sk := range e.SkippedSkills {
		if strings.EqualFold(filepath.Base(filepath.Dir(sk.Location)), name) {
			return fmt.Sprintf("%s: %s is not a skill because %s", msg, e.rel(sk.Location), sk.Reason)
		}
	}
	if len(e.Skills) == 0 {
		msg += "; it has no skills"
	} else {
		names := make([]string, len(e.Skills))
		for i, sk := range e.Skills {
			names[i] = SkillName(sk)
		}
		msg += "; its skills: " + strings.Join(names, ", ")
	}
	for _, sk := range e.SkippedSkills {
		msg += fmt.Sprintf("; %s is not a skill because %s", e.rel(sk.Location), sk.Reason)
	}
	return msg
}

// rel is p relative to the extension's folder, with forward slashes.
func (e *Extension) rel(p string) string {
	if r, ok := fsutil.Rel(e.Ext.Dir, p); ok {
		return filepath.ToSlash(r)
	}
	return p
}
