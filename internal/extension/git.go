package extension

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/proc"
)

// fetch brings the source described by md into stage and returns the
// folder that holds the manifest.
func (s *Store) fetch(ctx context.Context, md *InstallMetadata, stage string, progress io.Writer, interactive bool) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	switch md.Type {
	case SourceGit:
		clone := filepath.Join(stage, "clone")
		if err := gitClone(ctx, md.Source, md.Ref, clone, progress, interactive); err != nil {
			return "", err
		}
		if md.Subdir == "" {
			return clone, nil
		}
		if err := moveSubdir(stage, md); err != nil {
			return "", err
		}
		return filepath.Join(stage, "ext"), nil
	case SourceLocal:
		// The source folder is the person's own (they named it); what is
		// below it is the extension's, copied through a Root.
		src := md.Source
		fi, err := os.Stat(src)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a folder", src)
		}
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return "", err
		}
		if fsutil.Within(real, s.Dir()) || fsutil.Within(real, s.PluginsDir()) {
			return "", fmt.Errorf("%s contains the extensions folder itself; give the extension's own folder", src)
		}
		fmt.Fprintf(progress, "Copying %s …\n", src)
		root := filepath.Join(stage, "ext")
		files, size, out, err := copyTree(ctx, real, root)
		if err != nil {
			return "", fmt.Errorf("copy %s: %w", src, err)
		}
		noun := "files"
		if files == 1 {
			noun = "file"
		}
		fmt.Fprintf(progress, "Copied %d %s (%s).\n%s", files, noun, byteSize(size), outLinksWords(out))
		return root, nil
	}
	return "", fmt.Errorf("cannot fetch a source of type %q", md.Type)
}

// moveSubdir moves the folder md.Subdir (install --path) of the clone in
// stage to stage/ext. The repository is the extension author's: a
// component of the path that is a symbolic link is followed only while
// it stays inside the clone, so a `pkg -> ~/src` in the repository
// cannot make gemkit move (and, when the install fails, delete) a folder
// of the person's.
func moveSubdir(stage string, md *InstallMetadata) error {
	src := RedactSource(md.Source)
	st, err := fsutil.OpenRoot(stage)
	if err != nil {
		return err
	}
	defer st.Close()
	clone, err := st.OpenFolder("clone")
	if err != nil {
		return err
	}
	defer clone.Close()
	real, err := clone.Resolve(md.Subdir)
	if errors.Is(err, fsutil.ErrOutside) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			if link, ok := fsutil.Rel(clone.Dir(), pe.Path); ok {
				if target, lerr := clone.Readlink(link); lerr == nil {
					return subdirError("the folder %s of %s goes through %s, a symbolic link to %s, outside the repository; gemkit installs only a folder inside it, and moves nothing of yours", md.Subdir, src, filepath.ToSlash(link), target)
				}
			}
		}
		return subdirError("the folder %s of %s leads outside the repository through a symbolic link; gemkit installs only a folder inside it, and moves nothing of yours", md.Subdir, src)
	}
	if err != nil {
		return subdirError("the folder %s of %s: %w", md.Subdir, src, err)
	}
	if real == "." || fsutil.Within(".git", real) {
		return subdirError("the folder %s of %s leads to %s, which is not an extension's folder", md.Subdir, src, filepath.ToSlash(real))
	}
	fi, err := clone.Lstat(real)
	if err != nil || !fi.IsDir() {
		return subdirError("%s has no folder %s", src, md.Subdir)
	}
	return st.Rename(filepath.Join("clone", real), "ext")
}

// gitClone clones url at ref into dir with the user's own git, so their
// credentials, ssh keys and config apply. When the person is at a
// terminal, git's own progress (objects received, deltas) is passed on to
// progress.
func gitClone(ctx context.Context, url, ref, dir string, progress io.Writer, interactive bool) error {
	if strings.HasPrefix(url, "-") {
		return fmt.Errorf("%q is not a git URL", url)
	}
	if strings.HasPrefix(ref, "-") {
		return fmt.Errorf("the ref %q must not start with '-'", ref)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return errors.New("git is not installed or not on PATH; install git to install extensions from git URLs")
	}
	shown := RedactSource(url)
	if ref == "" {
		fmt.Fprintf(progress, "Cloning %s …\n", shown)
	} else {
		fmt.Fprintf(progress, "Cloning %s at %s …\n", shown, ref)
	}
	g := gitRunner{ctx: ctx, interactive: interactive, progress: progress, url: url}
	args := []string{"clone", "--depth", "1"}
	if ref != "" {
		args = append(args, "--branch", ref)
	}
	err := g.run("", true, append(args, "--", url, dir)...)
	if err == nil && ref == "" {
		return g.emptyHead(dir, shown)
	}
	if err == nil || !looksLikeCommit(ref) {
		return err
	}
	// --branch takes branches and tags only; a commit needs a full clone.
	// (Judging by the ref rather than git's message, which is translated
	// in the user's locale.)
	fsutil.RemoveTree(dir)
	fmt.Fprintf(progress, "%s is not a branch or tag; cloning the whole history to find the commit …\n", ref)
	if err := g.run("", true, "clone", "--no-checkout", "--", url, dir); err != nil {
		return err
	}
	if err := g.run(dir, false, "rev-parse", "--quiet", "--verify", "--end-of-options", ref+"^{commit}"); err != nil {
		return fmt.Errorf("%s has no branch, tag or commit %q", shown, ref)
	}
	return g.run(dir, false, "checkout", "--quiet", "--detach", ref+"^{commit}")
}

// emptyHead checks a clone made without --ref: a repository whose HEAD
// names a branch with no commits (a bare repository made with git init
// --bare, then pushed a branch of another name to) clones as empty, with
// only a warning, and would then be reported as having no manifest. The
// error names the branches it has, for --ref.
func (g gitRunner) emptyHead(dir, shown string) error {
	if _, err := g.output(dir, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		return nil
	}
	head, _ := g.output(dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	head = strings.TrimSpace(head)
	out, err := g.output("", "ls-remote", "--heads", "--", g.url)
	if err != nil {
		return fmt.Errorf("%s cloned as an empty repository: %w", shown, err)
	}
	var branches []string
	for _, l := range strings.Split(out, "\n") {
		if _, name, ok := strings.Cut(strings.TrimSpace(l), "\trefs/heads/"); ok {
			branches = append(branches, name)
		}
	}
	what := "its HEAD names no branch with commits"
	if head != "" {
		what = "its HEAD names the branch " + head + ", which has no commits"
	}
	switch len(branches) {
	case 0:
		return fmt.Errorf("%s is an empty repository (%s, and it has no other branch): push the extension to it first", shown, what)
	case 1:
		return fmt.Errorf("%s: %s; it has the branch %s: install that with --ref %s", shown, what, branches[0], branches[0])
	}
	return fmt.Errorf("%s: %s; it has the branches %s: install one with --ref, such as --ref %s", shown, what, strings.Join(branches, ", "), branches[0])
}

// output runs git in dir, quietly, and returns what it printed.
func (g gitRunner) output(dir string, args ...string) (string, error) {
	// A tag or commit is checked out detached, as an installed copy
	// should be: git's page of advice about it says nothing to a person
	// installing an extension.
	cmd := exec.CommandContext(g.ctx, "git", append([]string{"-c", "advice.detachedHead=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
	proc.Own(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if g.ctx.Err() != nil {
			return "", g.ctx.Err()
		}
		msg := gitErrorLines(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s failed: %s", args[0], strings.ReplaceAll(msg, g.url, RedactSource(g.url)))
	}
	return string(out), nil
}

// looksLikeCommit reports whether ref could be an abbreviated or full
// commit id: 4 to 64 hexadecimal digits.
func looksLikeCommit(ref string) bool {
	if len(ref) < 4 || len(ref) > 64 {
		return false
	}
	for _, c := range ref {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// gitRunner runs git commands for one fetch.
type gitRunner struct {
	ctx         context.Context
	interactive bool
	progress    io.Writer
	// url is the source, whose credentials must not appear in messages.
	url string
}

// run runs git in dir. With showProgress and a person at a terminal, git
// reports its progress to g.progress; otherwise it is quiet. Either way
// an error carries git's own fatal/error lines.
func (g gitRunner) run(dir string, showProgress bool, args ...string) error {
	if showProgress && g.interactive {
		args = append(args[:1:1], append([]string{"--progress"}, args[1:]...)...)
	} else if args[0] == "clone" {
		args = append(args[:1:1], append([]string{"--quiet"}, args[1:]...)...)
	}
	// A tag or commit is checked out detached, as an installed copy
	// should be: git's page of advice about it says nothing to a person
	// installing an extension.
	cmd := exec.CommandContext(g.ctx, "git", append([]string{"-c", "advice.detachedHead=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if !g.interactive {
		cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
		// Owned: it and its helpers (git-remote-https, ssh) end with
		// gemkit or the context. Git that may ask for a password at the
		// terminal stays in the terminal's foreground group.
		proc.Own(cmd)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if showProgress && g.interactive {
		cmd.Stderr = io.MultiWriter(&stderr, g.progress)
	}
	if err := cmd.Run(); err != nil {
		if g.ctx.Err() != nil {
			return g.ctx.Err()
		}
		msg := gitErrorLines(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if g.url != "" {
			msg = strings.ReplaceAll(msg, g.url, RedactSource(g.url))
		}
		return fmt.Errorf("git %s failed: %s", args[0], msg)
	}
	return nil
}

// gitErrorLines keeps what git said about the failure: its fatal:,
// error: and warning: lines and the advice after them, without the
// progress lines.
func gitErrorLines(stderr string) string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r", "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "warning:") {
			return strings.TrimSpace(strings.Join(lines[i:], "\n"))
		}
	}
	return strings.TrimSpace(stderr)
}
