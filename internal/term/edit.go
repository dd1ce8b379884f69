package term

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EditorCommand returns the person's editor: $VISUAL, else $EDITOR, else vi.
func EditorCommand(getenv func(string) string) string {
	for _, name := range []string{"VISUAL", "EDITOR"} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
	}
	return "vi"
}

// editDiff lets the person edit a copy of d's right side in their editor
// and keeps the result as d's new right side.
func (f *Frontend) editDiff(ctx context.Context, d *pendingDiff) {
	content, _, version, ok := f.snapshot(d)
	if !ok {
		return
	}
	if f.singleKey {
		f.restoreKeys()
	}
	edited, err := f.runEditor(ctx, d.path, content)
	if f.singleKey {
		f.reenterKeys()
	}
	if err != nil {
		fmt.Fprintf(f.opts.Out, "Editing failed: %v. The proposal is unchanged.\n", err)
		return
	}
	if !f.setEdited(d, version, edited) {
		fmt.Fprintf(f.opts.Out, "The diff of %s changed while you edited it; your edit was dropped.\n", d.path)
	}
}

// runEditor runs the person's editor on a copy of content (see Edit).
func (f *Frontend) runEditor(ctx context.Context, path, content string) (string, error) {
	f.log.Debug("running editor", "editor", f.opts.Editor, "file", path)
	return Edit(ctx, EditOptions{Editor: f.opts.Editor, In: f.opts.In, Out: f.opts.Out, TempDir: f.opts.TempDir}, path, content)
}

// EditOptions say how Edit runs the person's editor.
type EditOptions struct {
	// Editor is the shell command (EditorCommand); the file is its last
	// argument.
	Editor string
	// In is the terminal the editor reads, when it is a file; Out gets
	// its output.
	In  io.Reader
	Out io.Writer
	// TempDir holds the copy; empty means os.TempDir().
	TempDir string
}

// Edit writes content to a private temporary file named like path (so
// that the editor picks the right syntax), runs the editor on it and
// returns what the person saved. The terminal front-end and the agent's
// terminal review both use it.
func Edit(ctx context.Context, o EditOptions, path, content string) (string, error) {
	tmp, err := os.CreateTemp(o.TempDir, "gemkit-edit-*-"+filepath.Base(path))
	if err != nil {
		return "", fmt.Errorf("create the copy to edit: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write the copy to edit: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write the copy to edit: %w", err)
	}
	// Like git, run the editor through the shell so that a command with
	// arguments ("code --wait") works; the file is passed as "$1".
	cmd := exec.CommandContext(ctx, "sh", "-c", o.Editor+` "$1"`, "sh", name)
	if in, ok := o.In.(*os.File); ok {
		cmd.Stdin = in
	}
	cmd.Stdout = o.Out
	cmd.Stderr = o.Out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("editor %q: %w", o.Editor, err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("read the edited copy: %w", err)
	}
	return string(b), nil
}
