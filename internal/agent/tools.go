package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
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
	abs, rel, err := resolve(a.Workspace, args.Path)
	if err != nil {
		return "", err
	}
	f, fi, err := openRegular(abs)
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
	abs, rel, err := resolve(a.Workspace, args.Path)
	if err != nil {
		return "", err
	}
	var out []string
	truncated := false
	if !args.Recursive {
		ents, err := os.ReadDir(abs)
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
		err := filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == abs {
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if len(out) >= maxListed {
				truncated = true
				return filepath.SkipAll
			}
			r, _ := filepath.Rel(abs, p)
			r = filepath.ToSlash(r)
			if d.IsDir() {
				r += "/"
			}
			out = append(out, r)
			return nil
		})
		if err != nil {
			return "", err
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
	abs, rel, err := resolve(a.Workspace, args.Path)
	if err != nil {
		return "", err
	}
	p := Proposal{Path: abs, Rel: rel}
	old, err := a.readOld(ctx, abs)
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
	if err := a.write(context.WithoutCancel(ctx), abs, d.Content); err != nil {
		return "", fmt.Errorf("the edit of %s was accepted but could not be written (the file is unchanged): %w", rel, err)
	}
	a.emit(Event{Type: EventEditOutcome, Name: rel, Text: "accepted in " + d.Where + ", written"})
	msg := fmt.Sprintf("The person accepted the edit of %s (in %s); it was written.", rel, d.Where)
	if d.Content != p.New {
		msg += " They changed it before accepting; here is how the written file differs from your proposal:\n" +
			term.UnifiedDiff("proposed/"+rel, "written/"+rel, p.New, d.Content)
	}
	if news := a.afterEdit(ctx, abs, p); news != "" {
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
	abs, rel, err := resolve(a.Workspace, args.Path)
	if err != nil {
		return "", true, err
	}
	fi, statErr := os.Stat(abs)
	if statErr == nil && fi.IsDir() {
		return "", true, fmt.Errorf("%s is a folder; use %s", rel, listFilesTool)
	}
	text, handled, err := a.Host.ReadTextFile(ctx, abs)
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
// host when it has a view of its own, else from disk. A host that answers
// the read of a file missing on disk with empty text or with an error both
// mean a new file.
func (a *Agent) readOld(ctx context.Context, abs string) ([]byte, error) {
	_, statErr := os.Stat(abs)
	text, handled, err := a.Host.ReadTextFile(ctx, abs)
	if !handled {
		f, _, err := openRegular(abs)
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
		return nil, &fs.PathError{Op: "read", Path: abs, Err: err}
	}
	return []byte(text), nil
}

// notRegularError says a path the agent would read is not a regular
// file; mode is what it is.
type notRegularError struct{ mode fs.FileMode }

func (e *notRegularError) Error() string {
	if e.mode.IsDir() {
		return "a folder, not a file"
	}
	return fmt.Sprintf("not a regular file (%s)", e.mode.Type())
}

// openRegular opens a file the agent reads from disk (read_file,
// propose_edit's current content) without blocking, then judges what was
// opened: a FIFO (a tool can turn README.md into one) would block the
// open and every read for good, a device could be endless. Anything but a
// regular file is a *notRegularError inside an *fs.PathError.
func openRegular(abs string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "read", Path: abs, Err: &notRegularError{fi.Mode()}}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// write writes an accepted edit through the host, else atomically to disk.
func (a *Agent) write(ctx context.Context, abs, content string) error {
	handled, err := a.Host.WriteTextFile(ctx, abs, content)
	if handled {
		return err
	}
	return fsutil.ReplaceFile(abs, []byte(content))
}
