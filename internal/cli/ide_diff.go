package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
)

func newIDEDiffCmd(a *app) *cobra.Command {
	var f clientFlags
	var newFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "diff FILE [--new-file F]",
		Short: "Show a proposed change of FILE in the editor and apply it if accepted",
		Long: `Show the proposed new content of FILE (from --new-file, else standard input)
as a diff in the editor, and wait for the person. Accepted: FILE is
replaced atomically with the final text, including their edits (exit 0).
Rejected: FILE is left untouched (exit 1). Errors: exit 2.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), a, f, args[0], newFile, timeout)
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&newFile, "new-file", "", "file holding the proposed content (default: standard input)")
	cmd.Flags().DurationVar(&timeout, "timeout", ide.DiffTimeout, "how long to wait for the answer")
	return cmd
}

func runDiff(ctx context.Context, a *app, f clientFlags, target, newFile string, timeout time.Duration) error {
	if !filepath.IsAbs(target) && a.cwd != "" {
		target = filepath.Join(a.cwd, target)
	}
	path, err := filepath.Abs(target)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	proposal, err := readProposal(a, newFile)
	if err != nil {
		return fmt.Errorf("read the proposal: %w", err)
	}
	c, plan, err := ideConnect(ctx, a.clientOptions(f))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	if !c.DiffingEnabled() {
		return errors.New("the companion does not offer diffs (openDiff and closeDiff are not both listed)")
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unanswered := func(err error) error {
		switch {
		case ctx.Err() != nil:
			err = errors.New("interrupted: the diff was closed in the editor")
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrDiffTimeout):
			err = fmt.Errorf("no answer within %v: the diff was closed in the editor", timeout)
		}
		return fmt.Errorf("%w; %s is unchanged", err, path)
	}
	d, err := c.StartDiff(wctx, path, string(proposal))
	if err != nil {
		return unanswered(err)
	}
	fmt.Fprintf(a.Err, "Waiting for your answer in %s: accept or reject the diff of %s there (Ctrl-C cancels)…\n", plan.IDE.DisplayName, filepath.Base(path))
	out, err := d.Wait(wctx)
	if err != nil {
		return unanswered(err)
	}
	if !out.Accepted {
		fmt.Fprintf(a.Err, "Rejected: %s is unchanged.\n", path)
		return withExitCode(ExitNo, nil)
	}
	// Write through a symbolic link to its target, so that the link stays.
	dest := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		dest = real
	}
	if err := fsutil.ReplaceFile(dest, []byte(out.Content)); err != nil {
		// Keep what the person accepted (their edits included): print it.
		fmt.Fprint(a.Out, out.Content)
		return fmt.Errorf("accepted, but writing %s failed (it is unchanged; the accepted text was printed on standard output): %w", path, err)
	}
	fmt.Fprintf(a.Err, "Accepted: wrote %s (%d bytes).\n", path, len(out.Content))
	return nil
}

// readProposal reads the proposed content from file, or from standard
// input when file is "", bounded like a companion's request body.
func readProposal(a *app, file string) ([]byte, error) {
	in := a.In
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	} else if in == nil {
		return nil, errors.New("no --new-file and no standard input")
	} else if isTerminal(in) {
		fmt.Fprintln(a.Err, "Reading the proposed content from standard input; end it with Ctrl-D (or pass --new-file).")
	}
	data, err := io.ReadAll(io.LimitReader(in, ide.MaxRequestBody+1))
	switch {
	case err != nil:
	case len(data) > ide.MaxRequestBody:
		err = fmt.Errorf("the proposal is larger than %d bytes, more than a companion accepts", ide.MaxRequestBody)
	case !utf8.Valid(data):
		// JSON would carry U+FFFD in place of the bad bytes, and the
		// accepted text written back would silently differ.
		err = errors.New("the proposal is not UTF-8 text; a diff in the editor carries text only")
	}
	return data, err
}
