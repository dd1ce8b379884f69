package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/term"
)

// Names of the built-in tools. Extension tools are named
// EXTENSION_TOOL (disclosure.ExposedName); an extension tool whose name
// equals a built-in one is hidden behind it.
const (
	readFileTool    = "read_file"
	listFilesTool   = "list_files"
	proposeEditTool = "propose_edit"
	readDocTool     = disclosure.ReadDocTool
)

// Bounds of the built-in tools.
const (
	maxReadBytes = 256 << 10
	maxListed    = 500
)

func builtinDecls() []model.ToolDecl {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []model.ToolDecl{
		{Name: readFileTool, Description: "Read a text file in the workspace (at most 256 KiB).",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"path": str("the file's path, relative to the workspace")}, "required": []string{"path"}, "additionalProperties": false}},
		{Name: listFilesTool, Description: "List the files and folders in a folder of the workspace (folders end with /). With recursive, the whole tree below it, without .git (at most 500 entries).",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"path":      str("the folder, relative to the workspace; default the workspace itself"),
				"recursive": map[string]any{"type": "boolean", "description": "list everything below the folder"}}, "additionalProperties": false}},
		{Name: proposeEditTool, Description: "Propose a change to one file in the workspace; the person reviews it (in their IDE or terminal) and may accept, change or reject it, and you are told the outcome. " +
			"Give either content (the file's whole new content; also for a new file) or search and replace (replace the one exact occurrence of search).",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"path":    str("the file's path, relative to the workspace"),
				"content": str("the whole new content of the file"),
				"search":  str("text that occurs exactly once in the file"),
				"replace": str("the text to put in its place")}, "required": []string{"path"}, "additionalProperties": false}},
	}
}

func readDocDecl() model.ToolDecl {
	return model.ToolDecl{Name: readDocTool, Description: disclosure.ReadDocDescription, Schema: disclosure.ReadDocSchema()}
}

func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}

func (a *Agent) readFile(raw json.RawMessage) (string, error) {
	var args struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	t, err := a.openFile(args.Path)
	if err != nil {
		return "", err
	}
	defer t.close()
	rel := t.shown
	f, fi, err := t.open()
	var nr *notRegularError
	switch {
	case errors.As(err, &nr) && nr.mode.IsDir():
		return "", fmt.Errorf("%s is a folder; use %s", rel, listFilesTool)
	case errors.As(err, &nr):
		return "", fmt.Errorf("%s is not a regular file (%s); only files are read", rel, nr.mode.Type())
	case err != nil:
		return "", fmt.Errorf("read %s: %w", rel, errors.Unwrap(err))
	}
	defer f.Close()
	buf := make([]byte, maxReadBytes+1)
	n, _ := f.Read(buf)
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	data := buf[:n]
	more := len(data) > maxReadBytes
	if more {
		data = data[:maxReadBytes]
		for len(data) > 0 && !utf8.Valid(data) {
			data = data[:len(data)-1]
		}
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not UTF-8 text", rel)
	}
	s := string(data)
	if more {
		s += fmt.Sprintf("\n[gemkit: the file is %d bytes; only the first %d are shown]", fi.Size(), len(data))
	}
	return s, nil
}

func (a *Agent) listFiles(raw json.RawMessage) (string, error) {
	var args struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	if args.Path == "" {
		args.Path = "."
	}
	t, err := a.openFile(args.Path)
	if err != nil {
		return "", err
	}
	defer t.close()
	rel := t.shown
	var out []string
	truncated := false
	if !args.Recursive {
		ents, err := t.root.ReadDir(t.rel)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", rel, errors.Unwrap(err))
		}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			out = append(out, n)
		}
	} else {
		// Links are listed, never entered: a link a tool planted to a
		// folder outside is not listed through.
		err := t.root.WalkReadable(t.rel, func(_ *fsutil.Root, r string, d fs.DirEntry) error {
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if len(out) >= maxListed {
				truncated = true
				return fs.SkipAll
			}
			if d.IsDir() {
				r += "/"
			}
			out = append(out, r)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("list %s: %w", rel, err)
		}
	}
	sort.Strings(out)
	if len(out) > maxListed {
		out, truncated = out[:maxListed], true
	}
	s := strings.Join(out, "\n")
	if len(out) == 0 {
		s = "(empty folder)"
	}
	if truncated {
		s += fmt.Sprintf("\n[gemkit: only the first %d entries are shown]", maxListed)
	}
	return s, nil
}

// proposeEdit builds the proposal, has the person review it and writes
// what they accepted. The text returned tells the model the outcome.
//
// The file is resolved to its real name in the workspace before the
// review, and that name is what the person sees; its folder is held open
// from then on, and the accepted content is written into that very
// folder after checking that it is still at its name (folder.recheck): a
// tool that swaps a folder on the way for a link while the person
// reviews cannot make the write land elsewhere. A protected file (see
// protection) is written only when the person allowed that very file:
// by naming it (AllowProtected), or through a reviewer that asks about
// it in words (ProtectedReviewer); --yes alone never writes one.
func (a *Agent) proposeEdit(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		Search  *string `json:"search"`
		Replace *string `json:"replace"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	t, err := a.openFile(args.Path)
	if err != nil {
		return "", err
	}
	defer t.close()
	rel := t.shown
	dir, err := t.holdFolder()
	if err != nil {
		return "", fmt.Errorf("%s cannot be edited: %w", rel, err)
	}
	defer dir.close()
	p := Proposal{Path: t.abs, Rel: rel}
	old, err := a.readOld(ctx, t)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.IsNew = true
	case err != nil:
		return "", fmt.Errorf("read %s: %w", rel, errors.Unwrap(err))
	case !utf8.Valid(old):
		return "", fmt.Errorf("%s is not UTF-8 text; it cannot be edited here", rel)
	}
	p.Old = string(old)
	switch {
	case args.Content != nil && (args.Search != nil || args.Replace != nil):
		return "", errors.New("give either content or search and replace, not both")
	case args.Content != nil:
		p.New = *args.Content
	case args.Search != nil && args.Replace != nil:
		if p.IsNew {
			return "", fmt.Errorf("%s does not exist; give its whole content to create it", rel)
		}
		if *args.Search == "" {
			return "", errors.New("search is empty")
		}
		switch n := strings.Count(p.Old, *args.Search); n {
		case 0:
			return "", fmt.Errorf("search text not found in %s; read the file and copy the text exactly", rel)
		case 1:
			p.New = strings.Replace(p.Old, *args.Search, *args.Replace, 1)
		default:
			return "", fmt.Errorf("search text occurs %d times in %s; include more lines so that it occurs once", n, rel)
		}
	default:
		return "", errors.New("give content, or search and replace")
	}
	if !p.IsNew && p.New == p.Old {
		return "The proposal is the same as the file; nothing to do.", nil
	}
	if why := a.protection(t); why != "" && !a.allowed(t) {
		if !a.reviewsProtected() {
			a.emit(Event{Type: EventEditOutcome, Name: rel, Text: "refused: " + why + "; --allow-protected " + rel + " lets it be written"})
			return "", fmt.Errorf("%s. gemkit writes a protected file only when the person allows that very file, which --yes (or a diff in an IDE with no terminal to confirm on) does not do; nothing was written. "+
				"The person may allow it by running again with --allow-protected %s, or by reviewing the edit at a terminal", why, rel)
		}
		p.Protected = why
	}
	a.emit(Event{Type: EventEdit, Name: rel, Text: term.UnifiedDiff("a/"+rel, "b/"+rel, p.Old, p.New)})
	d, err := a.Host.Review(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("the edit of %s could not be reviewed, nothing was written: %w", rel, err)
	}
	if !d.Accepted {
		a.emit(Event{Type: EventEditOutcome, Name: rel, Text: "rejected in " + d.Where})
		return fmt.Sprintf("The person rejected the edit of %s (in %s); the file is unchanged.", rel, d.Where), nil
	}
	// Written even if ctx ended meanwhile: the person accepted it.
	if err := a.write(context.WithoutCancel(ctx), t, dir, d.Content); err != nil {
		var we *wroteElsewhereError
		if errors.As(err, &we) {
			a.emit(Event{Type: EventNotice, Text: "the edit of " + rel + " was written by " + d.Where + ", but " + we.err.Error() + "; it may have landed elsewhere: look at it"})
			return "", fmt.Errorf("the edit of %s was accepted and handed to %s to write, but %w; it may have been written elsewhere", rel, d.Where, we.err)
		}
		return "", fmt.Errorf("the edit of %s was accepted but could not be written (the file is unchanged): %w", rel, err)
	}
	a.emit(Event{Type: EventEditOutcome, Name: rel, Text: "accepted in " + d.Where + ", written"})
	msg := fmt.Sprintf("The person accepted the edit of %s (in %s); it was written.", rel, d.Where)
	if d.Content != p.New {
		msg += " They changed it before accepting; here is how the written file differs from your proposal:\n" +
			term.UnifiedDiff("proposed/"+rel, "written/"+rel, p.New, d.Content)
	}
	if news := a.afterEdit(ctx, t.abs, p); news != "" {
		msg += "\n\n" + news
	}
	return msg, nil
}

// hostRead reads a file for read_file through the host, when it has a
// view of its own (an editor's buffers).
func (a *Agent) hostRead(ctx context.Context, raw json.RawMessage) (string, bool, error) {
	var args struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return "", true, err
	}
	t, err := a.openFile(args.Path)
	if err != nil {
		return "", true, err
	}
	defer t.close()
	rel := t.shown
	fi, statErr := t.root.Stat(t.rel)
	if statErr == nil && fi.IsDir() {
		return "", true, fmt.Errorf("%s is a folder; use %s", rel, listFilesTool)
	}
	text, handled, err := a.Host.ReadTextFile(ctx, t.abs)
	if !handled {
		return "", false, nil
	}
	// A host may answer empty text for a file that does not exist.
	if errors.Is(err, fs.ErrNotExist) || (err == nil && text == "" && errors.Is(statErr, fs.ErrNotExist)) {
		return "", true, fmt.Errorf("read %s: no such file", rel)
	}
	if err != nil {
		return "", true, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(text) > maxReadBytes {
		size := len(text)
		text = strings.ToValidUTF8(text[:maxReadBytes], "")
		text += fmt.Sprintf("\n[gemkit: the file is %d bytes; only the first %d are shown]", size, len(text))
	}
	return text, true, nil
}

// readOld reads the current content of a file to be edited: through the
// host when it has a view of its own, else from disk through the
// workspace's Root. A host that answers the read of a file missing on
// disk with empty text or with an error both mean a new file.
func (a *Agent) readOld(ctx context.Context, t *file) ([]byte, error) {
	_, statErr := t.root.Lstat(t.rel)
	text, handled, err := a.Host.ReadTextFile(ctx, t.abs)
	if !handled {
		f, _, err := t.open()
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(f)
	}
	if errors.Is(statErr, fs.ErrNotExist) && (err != nil || text == "") {
		return nil, statErr
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: t.abs, Err: err}
	}
	return []byte(text), nil
}

// write writes an accepted edit into the folder held since the review,
// once recheck has found it still at its name: through the host when it
// writes (an ACP client, whose editor updates its buffer), else
// atomically through the folder's Root, replacing a link at the file's
// name rather than writing through it.
func (a *Agent) write(ctx context.Context, t *file, dir *folder, content string) error {
	if err := dir.recheck(t); err != nil {
		return err
	}
	handled, err := a.Host.WriteTextFile(ctx, t.abs, content)
	if handled {
		if err != nil {
			return err
		}
		// The host wrote by path: look again, so that a folder swapped
		// for a link during its write is at least reported.
		if err := dir.recheck(t); err != nil {
			return &wroteElsewhereError{err}
		}
		return nil
	}
	return dir.root.ReplaceFile(filepath.Base(t.rel), []byte(content))
}

// wroteElsewhereError is a write the host made by path after which the
// folder held since the review was no longer at the file's name.
type wroteElsewhereError struct{ err error }

func (e *wroteElsewhereError) Error() string { return e.err.Error() }
