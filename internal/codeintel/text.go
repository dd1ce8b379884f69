package codeintel

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// maxFileBytes bounds what is read of one file to show its lines or find
// a name in it.
const maxFileBytes = 8 << 20

// lines are a file's text split into lines (without their endings).
type lines []string

func splitLines(text string) lines {
	ls := strings.Split(text, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

// line returns 0-based line n, or "" past the end.
func (ls lines) line(n int) string {
	if n < 0 || n >= len(ls) {
		return ""
	}
	return ls[n]
}

// fileCache reads each file once per answer, as its Quoting allows:
// files in the workspace through the workspace's Root (no link out,
// regular files only), others only below a read-only root of the
// language servers (quoter.readOutside), and no closed path. A file kept
// out has no lines, and the error says why (withheld).
type fileCache struct {
	root  *fsutil.Root
	qt    *quoter
	files map[string]fileEntry
	// unsaved, when set, returns the texts of files not saved yet
	// (Unsaved); it is asked once, when the first file is read.
	unsaved func() map[string]string
	texts   map[string]string
	// closed is the closed list, asked once, when the first file is read.
	closed    closedList
	closedSet bool
}

type fileEntry struct {
	ls  lines
	err error
}

func newFileCache(root *fsutil.Root, qt *quoter) *fileCache {
	return &fileCache{root: root, qt: qt, files: map[string]fileEntry{}}
}

// get returns the lines of the file at the absolute path p.
func (c *fileCache) get(p string) (lines, error) {
	if e, ok := c.files[p]; ok {
		return e.ls, e.err
	}
	ls, err := c.read(p)
	c.files[p] = fileEntry{ls, err}
	return ls, err
}

// withheld reports whether the text of the file at p is kept out of the
// answer, and the words that say why.
func (c *fileCache) withheld(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	_, err := c.get(p)
	return withheld(err)
}

func (c *fileCache) read(p string) (lines, error) {
	if !c.closedSet {
		c.closed, c.closedSet = c.qt.closedList(), true
	}
	name, rerr := c.root.Rel(p)
	inside := rerr == nil
	// An unsaved buffer's text is judged as the file it is of.
	if (!inside || c.closed.inside) && closedAt(c.closed.paths, p) {
		return nil, &fs.PathError{Op: "quote", Path: p, Err: errClosed}
	}
	if c.unsaved != nil {
		c.texts, c.unsaved = c.unsaved(), nil
	}
	if text, ok := c.texts[p]; ok {
		// A buffer is judged by the file it is of, as it resolves (a
		// new file not on disk yet, by its name).
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = filepath.Clean(p)
		}
		switch {
		case closedAt(c.closed.paths, p):
			return nil, &fs.PathError{Op: "quote", Path: p, Err: errClosed}
		case inside && !fsutil.Within(c.root.Dir(), real):
			return nil, &fs.PathError{Op: "quote", Path: p, Err: errLinkOut}
		case !inside && !c.qt.quotable(p):
			return nil, &fs.PathError{Op: "quote", Path: p, Err: errNotRoot}
		}
		return splitLines(strings.ToValidUTF8(text, "\uFFFD")), nil
	}
	var data []byte
	var err error
	if inside {
		data, err = c.root.ReadFile(name, maxFileBytes)
		if errors.Is(err, fsutil.ErrOutside) {
			// A link out of the workspace: judged as where it leads,
			// and not followed either way.
			if closedAt(c.closed.paths, p) {
				return nil, &fs.PathError{Op: "quote", Path: p, Err: errClosed}
			}
			return nil, &fs.PathError{Op: "quote", Path: p, Err: errLinkOut}
		}
	} else {
		data, err = c.qt.readOutside(p)
	}
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		data = []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	return splitLines(string(data)), nil
}

// utf16Col converts a 0-based column counted in characters (runes) of
// line into LSP's UTF-16 code units. A column past the end is kept past
// the end by the same amount.
func utf16Col(line string, runes int) int {
	n, i := 0, 0
	for _, r := range line {
		if i == runes {
			return n
		}
		n += utf16.RuneLen(r)
		if utf16.RuneLen(r) < 0 {
			n++ // invalid rune: one unit
		}
		i++
	}
	return n + (runes - i)
}

// runeCol converts LSP's 0-based UTF-16 column within line into a
// 0-based column in characters.
func runeCol(line string, units int) int {
	n, i := 0, 0
	for _, r := range line {
		if n >= units {
			return i
		}
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1
		}
		n += w
		i++
	}
	return i + (units - n)
}

// isIdentRune reports whether r may be part of an identifier in the
// languages the servers serve (letters, digits, _ and $).
func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// occurrence is where a name occurs in a file: 0-based line, character
// column (runes) and UTF-16 column.
type occurrence struct {
	line, col, col16 int
	// qualified is the identifier chain before the name ("greet" for
	// greet.Greet), "" when none.
	qualified string
}

// findIdent returns where name occurs as a whole identifier in ls, at
// most max times (line order). Comments and strings are not told apart:
// a server's answer at such a place is empty and the next is tried.
func findIdent(ls lines, name string, max int) []occurrence {
	var out []occurrence
	if name == "" {
		return nil
	}
	for ln, l := range ls {
		from := 0
		for {
			i := strings.Index(l[from:], name)
			if i < 0 {
				break
			}
			i += from
			from = i + len(name)
			before, _ := utf8.DecodeLastRuneInString(l[:i])
			after, _ := utf8.DecodeRuneInString(l[i+len(name):])
			if (i > 0 && isIdentRune(before)) || (i+len(name) < len(l) && isIdentRune(after)) {
				continue
			}
			if inString(l[:i]) {
				continue // a module's path, a message
			}
			col := utf8.RuneCountInString(l[:i])
			out = append(out, occurrence{line: ln, col: col, col16: utf16Col(l, col), qualified: qualifierBefore(l[:i])})
			if len(out) >= max {
				return out
			}
		}
	}
	return out
}

// inString reports whether the end of before (a line up to a name) lies
// inside a string literal opened on the line: an odd number of unescaped
// quotes of one kind. Strings spanning lines are not seen.
func inString(before string) bool {
	var open rune
	esc := false
	for _, r := range before {
		switch {
		case esc:
			esc = false
		case r == '\\':
			esc = true
		case open == 0 && (r == '"' || r == '\'' || r == '`'):
			open = r
		case r == open:
			open = 0
		}
	}
	return open != 0
}

// qualifierBefore returns the identifier right before a "." or "::" at
// the end of s ("greet" in "fmt.Println(greet."), or "".
func qualifierBefore(s string) string {
	switch {
	case strings.HasSuffix(s, "::"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "."), strings.HasSuffix(s, "->"):
		s = strings.TrimSuffix(strings.TrimSuffix(s, "."), "->")
	default:
		return ""
	}
	end := len(s)
	for end > 0 {
		r, w := utf8.DecodeLastRuneInString(s[:end])
		if !isIdentRune(r) {
			break
		}
		end -= w
	}
	return s[end:]
}

// clipLine shortens a source line for an answer: leading white space
// dropped, at most maxLine characters.
func clipLine(l string) string {
	l = strings.TrimSpace(l)
	if utf8.RuneCountInString(l) > maxLine {
		r := []rune(l)
		return string(r[:maxLine]) + "…"
	}
	return l
}

// maxLine is the most characters of a source line an answer shows.
const maxLine = 160
