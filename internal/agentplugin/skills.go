package agentplugin

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

const skillsFix = "keep skills/ a folder in the plugin, each skill a folder in it holding its SKILL.md"

// findSkills finds the skill folders: each folder right under skills/
// holding a SKILL.md that is a regular file within the root, no deeper
// (§7.1); a skills that is no folder leaves the plugin without skills
// (§6.2), a SKILL.md out of the root is skipped (§4.1(3)); each with a
// note.
func (p *Plugin) findSkills(root *fsutil.Root) {
	fi, err := root.Stat(SkillsDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return // §6.2
	case errors.Is(err, fsutil.ErrOutside):
		p.note(SkillsDir, "", "it is a link out of the plugin's folder (§4.1): the plugin's skills are not loaded", skillsFix)
		return
	case err != nil:
		p.note(SkillsDir, "", err.Error()+": the plugin's skills are not loaded", skillsFix)
		return
	case !fi.IsDir():
		p.note(SkillsDir, "", "it is not a folder (§6.2): the plugin's skills are not loaded", skillsFix)
		return
	}
	entries, err := root.ReadDir(SkillsDir)
	if err != nil {
		p.note(SkillsDir, "", err.Error()+": the plugin's skills are not loaded", skillsFix)
		return
	}
	for _, e := range entries {
		dir := path.Join(SkillsDir, e.Name())
		st, err := root.Stat(dir)
		if errors.Is(err, fsutil.ErrOutside) {
			p.note(dir, "", "it is a link out of the plugin's folder (§4.1): this skill is skipped", skillsFix)
		}
		if err != nil || !st.IsDir() {
			continue
		}
		file := path.Join(dir, "SKILL.md")
		st, err = root.Stat(file)
		switch {
		case errors.Is(err, fsutil.ErrOutside):
			p.note(file, "", "it is a link out of the plugin's folder (§4.1): this skill is skipped", skillsFix)
		case err == nil && st.Mode().IsRegular():
			p.Skills = append(p.Skills, dir)
		}
	}
}

// SkillProblem says why a SKILL.md in the folder dir whose front matter
// gives name and description is not an Agent Skill
// (agentskills.io/specification: a name of 1 to 64 lowercase letters,
// digits and single hyphens, not at either end, the same as its
// folder's; a description of 1 to 1,024 characters), "" when it is one.
func SkillProblem(dir, name, description string) string {
	switch {
	case name == "" || len(name) > 64:
		return "its name must be 1 to 64 characters"
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
		return "its name may hold only lowercase letters, digits and hyphens"
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--"):
		return "its name must not start or end with a hyphen, nor hold two in a row"
	case name != path.Base(dir):
		return "its name " + name + " is not its folder's, " + path.Base(dir)
	case strings.TrimSpace(description) == "":
		return "its description is empty"
	case len([]rune(description)) > 1024:
		return "its description is longer than 1,024 characters"
	}
	return ""
}
