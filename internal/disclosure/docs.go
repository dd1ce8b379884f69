package disclosure

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// MaxDocBytes is the largest doc ReadDoc returns: a doc is read into a
// model's context whole, so a bigger one is refused with a message rather
// than cut where the reader cannot tell.
const MaxDocBytes = 1 << 20

// Doc is a doc's text with what describes it.
type Doc struct {
	Extension   string `json:"extension"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Path is the doc file's real path.
	Path string `json:"path"`
	// MIMEType is text/markdown for .md files, else text/plain.
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
}

// DocRef names a doc without reading it (for resource lists).
type DocRef struct {
	Extension   string
	Name        string
	Description string
	MIMEType    string
	// Skill is set for an agent skill's instructions.
	Skill bool
}

// DocRefs lists every doc of the set, by extension then manifest order,
// each extension's skills after its docs (named SkillPrefix + the
// skill's name, as read_doc takes them).
func (s *Set) DocRefs() []DocRef {
	var out []DocRef
	for _, e := range s.Extensions {
		for _, d := range e.Ext.Manifest.Docs {
			out = append(out, DocRef{Extension: e.Name, Name: d.Name, Description: OneLine(d.Description), MIMEType: mimeType(d.File)})
		}
		for _, sk := range e.Skills {
			out = append(out, DocRef{Extension: e.Name, Name: SkillPrefix + SkillName(sk), Description: SkillLine(sk.Description), MIMEType: "text/markdown", Skill: true})
		}
	}
	return out
}

// DocError is a doc that cannot be read; its message says what exists
// instead, for a model to try again.
type DocError struct{ Msg string }

func (e *DocError) Error() string { return e.Msg }

func mimeType(file string) string {
	if strings.EqualFold(filepath.Ext(file), ".md") {
		return "text/markdown"
	}
	return "text/plain"
}

// ReadDoc reads the doc called name of the enabled extension ext, or,
// when name is SkillPrefix followed by a skill's name and no doc has that
// name, the skill's instructions (see readSkill). The file must be a
// regular file inside the extension's folder (symlinks resolved), at most
// MaxDocBytes, and UTF-8 text.
func (s *Set) ReadDoc(ext, name string) (*Doc, error) {
	e := s.Extension(ext)
	if e == nil {
		names := make([]string, 0, len(s.Extensions))
		for _, x := range s.Extensions {
			if len(x.Ext.Manifest.Docs) > 0 || len(x.Skills) > 0 {
				names = append(names, x.Name)
			}
		}
		if len(names) == 0 {
			return nil, &DocError{fmt.Sprintf("there is no enabled extension %q, and no enabled extension has docs or skills", ext)}
		}
		return nil, &DocError{fmt.Sprintf("there is no enabled extension %q; extensions with docs or skills: %s", ext, strings.Join(names, ", "))}
	}
	m := e.Ext.Manifest
	d := m.Doc(name)
	if d == nil {
		if skill, ok := strings.CutPrefix(name, SkillPrefix); ok {
			return s.readSkill(e, skill)
		}
		return nil, &DocError{fmt.Sprintf("extension %s has no doc %q; %s", ext, name, e.readable())}
	}
	fail := func(why string) error {
		return &DocError{fmt.Sprintf("doc %s of extension %s cannot be read: %s", name, ext, why)}
	}
	root, err := e.Ext.Root()
	if err != nil {
		return nil, fail(err.Error())
	}
	defer root.Close()
	rel, err := e.Ext.RelName(d.File)
	if err != nil {
		return nil, fail("its file is outside the extension folder")
	}
	real, err := resolveIn(root, rel)
	if err != nil {
		return nil, fail(err.Error())
	}
	path := root.Path(real)
	data, err := root.ReadFile(real, MaxDocBytes)
	if errors.Is(err, fsutil.ErrTooLarge) {
		return nil, &DocError{fmt.Sprintf("doc %s of extension %s is larger than %d bytes and is not loaded", name, ext, MaxDocBytes)}
	}
	if err != nil {
		return nil, fail(docReadError(err))
	}
	if !utf8.Valid(data) {
		return nil, &DocError{fmt.Sprintf("doc %s of extension %s is not UTF-8 text", name, ext)}
	}
	return &Doc{Extension: ext, Name: d.Name, Description: OneLine(d.Description), Path: path, MIMEType: mimeType(d.File), Text: string(data)}, nil
}

// readable says what read_doc can read of e, for a model to try again.
func (e *Extension) readable() string {
	var docs, skills []string
	for _, d := range e.Ext.Manifest.Docs {
		docs = append(docs, d.Name)
	}
	for _, sk := range e.Skills {
		skills = append(skills, SkillPrefix+SkillName(sk))
	}
	switch {
	case len(docs) == 0 && len(skills) == 0:
		return "it has no docs and no skills"
	case len(skills) == 0:
		return "its docs: " + strings.Join(docs, ", ")
	case len(docs) == 0:
		return "its skills: " + strings.Join(skills, ", ")
	}
	return "its docs: " + strings.Join(docs, ", ") + "; its skills: " + strings.Join(skills, ", ")
}

// resolveIn resolves rel, a doc's or skill's file, to its real name in
// the extension's folder, and refuses it, in words for a model, when a
// link leads it out or it is missing.
func resolveIn(root *fsutil.Root, rel string) (string, error) {
	real, err := root.Resolve(rel)
	if err != nil {
		return "", errors.New(docReadError(err))
	}
	if _, err := root.Lstat(real); err != nil {
		return "", errors.New(docReadError(err))
	}
	return real, nil
}

// docReadError says why a doc's file cannot be read, for a model.
func docReadError(err error) string {
	switch {
	case errors.Is(err, fsutil.ErrOutside):
		return "its file is outside the extension folder"
	case errors.Is(err, fs.ErrNotExist):
		return "its file is missing"
	case errors.Is(err, fsutil.ErrNotRegular):
		return "its file is not a regular file"
	}
	return err.Error()
}
