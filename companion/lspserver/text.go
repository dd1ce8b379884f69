package lspserver

import (
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Position is an LSP position: 0-based line, and a character offset in
// UTF-16 code units (the encoding every client supports and the one
// gemkit's server announces).
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is an LSP range, end exclusive.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// TextEdit replaces a range of a document.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// pathOf returns the file path of a file: URI, or "" for any other scheme
// (untitled:, jdt:, …), which never enters the context.
func pathOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return ""
	}
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // file:///C:/x on Windows
	}
	p = filepath.FromSlash(p)
	if !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

// uriOf returns the file: URI of an absolute path.
func uriOf(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// offset returns the byte offset in text of p, clamped to the text as
// clients themselves clamp positions past a line's end.
func offset(text string, p Position) int {
	off := 0
	for line := 0; line < p.Line; line++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += off
	}
	units := 0
	for off < end && units < p.Character {
		r, n := utf8.DecodeRuneInString(text[off:end])
		units += utf16.RuneLen(r)
		off += n
	}
	return off
}

// endPosition is the position just past the last character of text.
func endPosition(text string) Position {
	line := strings.Count(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	return Position{Line: line, Character: utf16Len(last)}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// splitLines splits text after each newline; the last element has none
// when text does not end in one.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
}

// lineEdit returns one edit that turns from into to, replacing only the
// lines that differ, and the 0-based lines [first, last] of to that it
// changed (last < first when it only deletes).
//
// Two positions that LSP allows are avoided, since Neovim mishandles
// them: an empty from is replaced with a range that ends on line 1
// (Neovim 0.7 leaves an extra empty line when text ending in a newline
// is inserted at 0:0 of an empty buffer), and an edit never starts on
// the line after a final newline. Neovim 0.10 appends such an edit's
// lines after the buffer's last line, its final newline included, and so
// gains an empty line (runtime/lua/vim/lsp/util.lua, apply_text_edits:
// the start_row past the last line); it starts instead at the end of the
// last line, with that newline moved into the new text.
func lineEdit(from, to string) (TextEdit, int, int) {
	a := strings.SplitAfter(from, "\n")
	b := strings.SplitAfter(to, "\n")
	// SplitAfter leaves a last element: "" after a final newline.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	start := Position{Line: p}
	endLine := len(a) - s
	var end Position
	if endLine < len(a) {
		end = Position{Line: endLine}
	} else {
		end = endPosition(from)
	}
	if start.Line > end.Line || (start.Line == end.Line && start.Character > end.Character) {
		start = end
	}
	newText := strings.Join(b[p:len(b)-s], "")
	if from == "" {
		end = Position{Line: 1}
	}
	first, last := p, len(b)-s-1
	if last >= first && strings.HasSuffix(newText, "\n") && last == len(b)-1 {
		last--
	}
	if n := len(a) - 1; a[n] == "" && n > 0 && start.Line == n && start.Character == 0 {
		// from ends in a newline and the edit starts after it: start at
		// the end of the last line, before that newline, instead.
		start = Position{Line: n - 1, Character: utf16Len(strings.TrimSuffix(a[n-1], "\n"))}
		newText = "\n" + newText
		if end.Line == n && strings.HasSuffix(newText, "\n") {
			// The edit also ends after it: end before it too.
			end = start
			newText = strings.TrimSuffix(newText, "\n")
		}
	}
	return TextEdit{Range: Range{Start: start, End: end}, NewText: newText}, first, last
}
