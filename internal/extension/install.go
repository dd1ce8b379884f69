package extension

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ConsentPrompt is what a ConsentFunc shows before the person decides.
type ConsentPrompt struct {
	// Action is "Install", "Link" or "Update".
	Action string
	// Extension is the extension as staged (its Dir is a temporary
	// folder while installing).
	Extension *Extension
	// Lines is the consent text (see ConsentText).
	Lines []string
	// Changes lists, for an update, what changed since the consented
	// version; empty for an install.
	Changes []Change
}

// ConsentFunc asks the person whether to go ahead. It returns false (and a
// nil error) when they say no.
type ConsentFunc func(ctx context.Context, p ConsentPrompt) (bool, error)

// ErrConsentRefused is returned when the person does not agree.
var ErrConsentRefused = errors.New("consent refused; nothing was changed")

// InstallRequest says what to install.
type InstallRequest struct {
	// Source is a git URL (https, ssh, git@host:path, file://, ...) or a
	// local folder.
	Source string
	// Ref is a branch, tag or commit of a git source.
	Ref string
	// Subdir is the folder inside the source that holds the manifest.
	Subdir string
	// Consent is asked before anything is installed; nil refuses.
	Consent ConsentFunc
	// Progress receives one line per long step (clone, copy); nil
	// discards them.
	Progress io.Writer
	// Interactive lets git ask for credentials on the terminal; when false
	// git fails instead of waiting for input that cannot come.
	Interactive bool
}

// IsGitURL reports whether source names a git repository rather than a
// local folder.
func IsGitURL(source string) bool {
	for _, p := range []string{"https://", "http://", "ssh://", "git://", "file://", "git+ssh://", "sso://", "git@"} {
		if strings.HasPrefix(source, p) {
			return true
		}
	}
	// scp-like user@host:path
	if at := strings.Index(source, "@"); at > 0 {
		if colon := strings.Index(source[at:], ":"); colon > 1 && !strings.Contains(source[:at], "/") {
			return true
		}
	}
	return false
}

// RedactSource returns source fit to print: a URL's password or token
// ("https://user:TOKEN@host/repo", "https://TOKEN@host/repo") is replaced
// by "***". The install metadata keeps the source as given, since git
// needs it to update.
func RedactSource(source string) string {
	u, err := url.Parse(source)
	if err != nil || u.User == nil || u.Scheme == "" || u.Scheme == "ssh" || u.Scheme == "git+ssh" {
		// ssh user names (git@host) are not secrets.
		return source
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.UserPassword(u.User.Username(), "***")
	} else {
		u.User = url.User("***")
	}
	return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
}

// Install fetches an extension (git clone or folder copy) into a staging
// folder inside the extensions folder, checks its manifest, asks for
// consent and then renames it into place, so a failure at any step leaves
// nothing behind. The granted permissions are recorded (see
// RecordConsent) so the first tool run does not ask again.
func (s *Store) Install(ctx context.Context, req InstallRequest) (*Installed, error) {
	if req.Source == "" {
		return nil, errors.New("give a git URL or a local folder to install from")
	}
	subdir, err := cleanSubdir(req.Subdir)
	if err != nil {
		return nil, err
	}
	md := &InstallMetadata{Source: req.Source}
	if IsGitURL(req.Source) {
		md.Type, md.Ref, md.Subdir = SourceGit, req.Ref, subdir
	} else {
		if req.Ref != "" {
			return nil, fmt.Errorf("--ref applies to git sources only, and %s is a local folder", req.Source)
		}
		abs, err := filepath.Abs(filepath.Join(req.Source, subdir))
		if err != nil {
			return nil, err
		}
		md.Type, md.Source = SourceLocal, abs
	}
	stage, err := s.newStaging("install")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	root, err := s.fetch(ctx, md, stage, req.Progress, req.Interactive)
	if errors.Is(err, fs.ErrNotExist) && md.Type == SourceLocal {
		return nil, fmt.Errorf("%s does not exist; give a git URL or a local folder", md.Source)
	}
	if err != nil {
		return nil, err
	}
	ext, err := s.loadFetched(root, md)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be installed: %w", RedactSource(req.Source), err)
	}
	name := ext.Manifest.Name
	if err := s.checkFree(name); err != nil {
		return nil, err
	}
	if err := ask(ctx, req.Consent, ConsentPrompt{Action: "Install", Extension: ext, Lines: ConsentText(ext, "Installing")}); err != nil {
		return nil, err
	}
	if err := writeMetadata(root, md); err != nil {
		return nil, err
	}
	if err := s.commit(ctx, root, name); err != nil {
		return nil, err
	}
	if err := s.RecordConsent(name, PermissionsHash(ext.Manifest)); err != nil {
		os.RemoveAll(filepath.Join(s.Dir(), name))
		return nil, err
	}
	return s.Get(name)
}

// Link installs the extension in dir without copying it, as Gemini CLI's
// `extensions link` does: the entry in the extensions folder holds only
// install metadata of type "link" pointing at dir's real path, so edits
// in dir take effect at once and ${extensionPath} is the real path.
func (s *Store) Link(ctx context.Context, dir string, consent ConsentFunc) (*Installed, error) {
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist; give the folder of the extension you are working on", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", dir, err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	ext, err := LoadWith(real, LoadOptions{WorkspacePath: s.workspace})
	if err != nil {
		return nil, fmt.Errorf("%s cannot be linked: %w", dir, err)
	}
	name := ext.Manifest.Name
	if err := s.checkFree(name); err != nil {
		return nil, err
	}
	if err := ask(ctx, consent, ConsentPrompt{Action: "Link", Extension: ext, Lines: ConsentText(ext, "Linking")}); err != nil {
		return nil, err
	}
	stage, err := s.newStaging("link")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	entry := filepath.Join(stage, "entry")
	if err := os.Mkdir(entry, 0o755); err != nil {
		return nil, err
	}
	if err := writeMetadata(entry, &InstallMetadata{Source: real, Type: SourceLink}); err != nil {
		return nil, err
	}
	if err := s.commit(ctx, entry, name); err != nil {
		return nil, err
	}
	if err := s.RecordConsent(name, PermissionsHash(ext.Manifest)); err != nil {
		os.RemoveAll(filepath.Join(s.Dir(), name))
		return nil, err
	}
	return s.Get(name)
}

// Uninstall removes an installed extension, its enablement rules and its
// consent record. Like Gemini CLI it also accepts the source the extension
// was installed from. A linked extension's source folder is never touched.
func (s *Store) Uninstall(name string) error {
	in, err := s.Get(name)
	if err != nil {
		if bySource := s.findBySource(name); bySource != nil {
			in, err = bySource, nil
		}
	}
	if err != nil {
		return err
	}
	names := []string{in.Name}
	if m := in.Manifest(); m != nil && m.Name != in.Name {
		names = append(names, m.Name)
	}
	if err := s.removeEntry(in, names); err != nil {
		return err
	}
	for _, n := range names {
		if err := s.ForgetConsent(n); err != nil {
			return err
		}
	}
	return nil
}

// UpdateRequest says how to update.
type UpdateRequest struct {
	// Consent is asked only when permissions, tools or MCP servers
	// changed; nil refuses such an update.
	Consent     ConsentFunc
	Progress    io.Writer
	Interactive bool
}

// UpdateResult says what an update did.
type UpdateResult struct {
	Name       string   `json:"name"`
	OldVersion string   `json:"oldVersion"`
	NewVersion string   `json:"newVersion"`
	Changes    []Change `json:"changes,omitempty"`
	// UpToDate is true when the source has nothing new; nothing changed.
	UpToDate bool `json:"upToDate"`
	// Linked is true for a linked extension, which is always current.
	Linked bool `json:"linked,omitempty"`
}

// Update fetches the extension again from the source it was installed
// from and replaces it. Consent is asked again only when permissions,
// tools or MCP servers changed, and shows what changed. The old version
// stays in place until the new one is checked and agreed to, and the
// swap is two renames. The extension's .env settings file is kept.
func (s *Store) Update(ctx context.Context, name string, req UpdateRequest) (*UpdateResult, error) {
	in, err := s.Get(name)
	if err != nil {
		return nil, err
	}
	res := &UpdateResult{Name: in.Name}
	var old *Manifest
	if in.Extension != nil {
		old = in.Extension.Unexpanded()
		res.Name, res.OldVersion = old.Name, old.Version
	}
	md := in.Metadata
	switch {
	case md == nil:
		return nil, fmt.Errorf("%s has no %s, so its source is unknown; uninstall it and install it again", in.Name, InstallMetadataFile)
	case md.Type == SourceLink:
		res.Linked, res.UpToDate, res.NewVersion = true, true, res.OldVersion
		return res, nil
	case md.Type == SourceGitHubRelease:
		return nil, fmt.Errorf("%s was installed from a GitHub release by Gemini CLI; update it with `gemini extensions update %s`", in.Name, in.Name)
	case md.Type != SourceGit && md.Type != SourceLocal:
		return nil, fmt.Errorf("%s has the unknown source type %q in %s", in.Name, md.Type, InstallMetadataFile)
	}
	stage, err := s.newStaging("update")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	root, err := s.fetch(ctx, md, stage, req.Progress, req.Interactive)
	if errors.Is(err, fs.ErrNotExist) && md.Type == SourceLocal {
		return nil, fmt.Errorf("its source folder %s no longer exists; uninstall it and install it from where it is now", md.Source)
	}
	if err != nil {
		return nil, err
	}
	ext, err := s.loadFetched(root, md)
	if err != nil {
		return nil, fmt.Errorf("the new version of %s cannot be installed: %w", in.Name, err)
	}
	if old != nil && ext.Manifest.Name != old.Name {
		return nil, fmt.Errorf("the source of %s now holds an extension called %q; uninstall %s and install that instead", old.Name, ext.Manifest.Name, old.Name)
	}
	res.NewVersion = ext.Manifest.Version
	if in.Extension != nil {
		a, errA := treeDigest(in.Extension.Dir)
		b, errB := treeDigest(root)
		if errA == nil && errB == nil && a == b {
			res.UpToDate = true
			return res, nil
		}
	}
	if old == nil {
		old = &Manifest{}
	}
	res.Changes = ConsentChanges(old, ext.Unexpanded())
	if len(res.Changes) > 0 {
		lines := append(ConsentText(ext, "Updating"), "", "What changed since you last agreed:")
		lines[0] = Printable(fmt.Sprintf("Updating extension %q from version %s to %s.", res.Name, res.OldVersion, res.NewVersion))
		for _, c := range res.Changes {
			lines = append(lines, "  - "+c.What)
		}
		if err := ask(ctx, req.Consent, ConsentPrompt{Action: "Update", Extension: ext, Lines: lines, Changes: res.Changes}); err != nil {
			return nil, err
		}
	}
	if err := copyIfMissing(filepath.Join(in.Entry, ".env"), filepath.Join(root, ".env")); err != nil {
		return nil, fmt.Errorf("keep the settings of %s: %w", in.Name, err)
	}
	if err := writeMetadata(root, md); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.swap(root, in.Entry, stage); err != nil {
		return nil, err
	}
	if len(res.Changes) > 0 {
		if err := s.RecordConsent(res.Name, PermissionsHash(ext.Manifest)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// loadFetched loads what fetch brought into the staging folder root,
// naming the manifest in messages as it is in the source (the person can
// do nothing with the staging copy's path).
func (s *Store) loadFetched(root string, md *InstallMetadata) (*Extension, error) {
	var shown, where string
	switch md.Type {
	case SourceGit:
		src := RedactSource(md.Source)
		shown, where = ManifestFile+" in "+src, src
		if md.Subdir != "" {
			shown, where = md.Subdir+"/"+shown, "the folder "+md.Subdir+" of "+src
		}
	default:
		shown, where = filepath.Join(md.Source, ManifestFile), md.Source
	}
	if _, err := os.Lstat(filepath.Join(root, ManifestFile)); errors.Is(err, fs.ErrNotExist) {
		hint := ""
		if md.Type == SourceGit && md.Subdir == "" {
			hint = "; if the extension is in a sub-folder of the repository, name it with --path"
		}
		return nil, fmt.Errorf("%s has no %s%s", where, ManifestFile, hint)
	}
	return LoadWith(root, LoadOptions{WorkspacePath: s.workspace, shownManifest: shown})
}

// findBySource returns the installed extension whose install metadata
// names source, or nil.
func (s *Store) findBySource(source string) *Installed {
	all, err := s.List()
	if err != nil {
		return nil
	}
	for _, in := range all {
		if in.Metadata != nil && strings.EqualFold(in.Metadata.Source, source) {
			return in
		}
	}
	return nil
}

// removeEntry deletes an entry of the extensions folder and the
// enablement rules of names, under the lock.
func (s *Store) removeEntry(in *Installed, names []string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := os.Lstat(in.Entry)
	if err != nil {
		return fmt.Errorf("uninstall %s: %w", in.Name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A symlink made by hand: remove the link, not what it points at.
		if err := os.Remove(in.Entry); err != nil {
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
	} else {
		// Rename first, so the name is free at once and a failure while
		// deleting leaves a staging folder rather than half an extension.
		trash, err := os.MkdirTemp(s.Dir(), stagingPrefix+"remove-")
		if err != nil {
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
		if err := os.Rename(in.Entry, filepath.Join(trash, "old")); err != nil {
			os.Remove(trash)
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
		if err := os.RemoveAll(trash); err != nil {
			return fmt.Errorf("uninstall %s: removed, but could not delete %s: %w", in.Name, trash, err)
		}
	}
	for _, n := range names {
		if err := s.forgetEnablement(n); err != nil {
			return err
		}
	}
	return nil
}

// ask runs the consent function and turns a no into ErrConsentRefused.
func ask(ctx context.Context, consent ConsentFunc, p ConsentPrompt) error {
	if consent == nil {
		return ErrConsentRefused
	}
	ok, err := consent(ctx, p)
	if err != nil {
		return err
	}
	if !ok {
		return ErrConsentRefused
	}
	return nil
}

func cleanSubdir(sub string) (string, error) {
	if sub == "" {
		return "", nil
	}
	c := filepath.Clean(filepath.FromSlash(sub))
	if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("--path %q must be a folder inside the source", sub)
	}
	if c == "." {
		return "", nil
	}
	return filepath.ToSlash(c), nil
}

// newStaging makes a temporary folder inside the extensions folder, so the
// final rename stays on one file system.
func (s *Store) newStaging(kind string) (string, error) {
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		return "", fmt.Errorf("create the extensions folder: %w", err)
	}
	s.sweepStaging()
	d, err := os.MkdirTemp(s.Dir(), stagingPrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("create a staging folder: %w", err)
	}
	return d, nil
}

// staleStaging is how old a staging folder must be before a later install
// deletes it: old enough that no install can still be using it.
const staleStaging = time.Hour

// sweepStaging deletes staging folders that a killed gemkit left behind,
// so they do not pile up (Gemini CLI would warn about each one).
func (s *Store) sweepStaging() {
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		return
	}
	for _, e := range entries {
		if !isStagingName(e.Name()) || !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleStaging {
			os.RemoveAll(filepath.Join(s.Dir(), e.Name()))
		}
	}
}

// checkFree fails when an extension called name is installed.
func (s *Store) checkFree(name string) error {
	if _, err := os.Lstat(filepath.Join(s.Dir(), name)); err == nil {
		return fmt.Errorf("an extension called %q is already installed; use `gemkit extensions update %s`, or uninstall it first", name, name)
	}
	if in, err := s.Get(name); err == nil {
		return fmt.Errorf("an extension called %q is already installed (as %s); uninstall it first", name, in.Name)
	}
	return nil
}

// commit renames the staged folder into place under the lock. It is the
// point of no return, so it gives up first if ctx has ended (an
// interrupted install must not complete). Enablement rules left from an
// earlier extension of that name are dropped, so a new install is enabled
// everywhere, as Gemini CLI's install enables it.
func (s *Store) commit(ctx context.Context, staged, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	dest := filepath.Join(s.Dir(), name)
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("an extension called %q was installed meanwhile; nothing was changed", name)
	}
	if err := s.forgetEnablement(name); err != nil {
		return err
	}
	if err := os.Rename(staged, dest); err != nil {
		return fmt.Errorf("move %s into place: %w", name, err)
	}
	return nil
}

// errNoExchange says that the file system cannot swap two entries in one
// step.
var errNoExchange = errors.New("no atomic exchange on this file system")

// swap replaces entry with staged in one step: the two are exchanged
// with renameat2(RENAME_EXCHANGE), so there is no moment at which the
// extension is missing, and staged then holds the old version, which is
// deleted with the staging folder. A file system without the exchange
// gets two renames instead (old aside, new in place), and a failure of
// the second puts the old version back.
func (s *Store) swap(staged, entry, stage string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	err = exchange(staged, entry)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errNoExchange) {
		return fmt.Errorf("put the new version in place: %w", err)
	}
	old := filepath.Join(stage, "previous")
	if err := os.Rename(entry, old); err != nil {
		return fmt.Errorf("move the old version aside: %w", err)
	}
	if err := os.Rename(staged, entry); err != nil {
		if rerr := os.Rename(old, entry); rerr != nil {
			return fmt.Errorf("install the new version: %v; and restoring the old one failed: %v (it is in %s)", err, rerr, old)
		}
		return fmt.Errorf("install the new version: %w; the old version is back in place", err)
	}
	return nil
}

// writeMetadata writes the install metadata, readable by the user alone
// when the source URL carries a password or token.
func writeMetadata(dir string, md *InstallMetadata) error {
	data, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if RedactSource(md.Source) != md.Source {
		perm = 0o600
	}
	return writeFileAtomic(filepath.Join(dir, InstallMetadataFile), data, perm)
}

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
		sub := filepath.Join(clone, filepath.FromSlash(md.Subdir))
		fi, err := os.Lstat(sub)
		if err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s has no folder %s (--path)", RedactSource(md.Source), md.Subdir)
		}
		root := filepath.Join(stage, "ext")
		if err := os.Rename(sub, root); err != nil {
			return "", err
		}
		return root, nil
	case SourceLocal:
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
		if r, err := filepath.Rel(real, s.Dir()); err == nil && !strings.HasPrefix(r, "..") {
			return "", fmt.Errorf("%s contains the extensions folder itself; give the extension's own folder", src)
		}
		fmt.Fprintf(progress, "Copying %s …\n", src)
		root := filepath.Join(stage, "ext")
		files, size, err := copyTree(ctx, real, root)
		if err != nil {
			return "", fmt.Errorf("copy %s: %w", src, err)
		}
		fmt.Fprintf(progress, "Copied %d files (%s).\n", files, byteSize(size))
		return root, nil
	}
	return "", fmt.Errorf("cannot fetch a source of type %q", md.Type)
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
	if err == nil || !looksLikeCommit(ref) {
		return err
	}
	// --branch takes branches and tags only; a commit needs a full clone.
	// (Judging by the ref rather than git's message, which is translated
	// in the user's locale.)
	os.RemoveAll(dir)
	fmt.Fprintf(progress, "%s is not a branch or tag; cloning the whole history to find the commit …\n", ref)
	if err := g.run("", true, "clone", "--no-checkout", "--", url, dir); err != nil {
		return err
	}
	if err := g.run(dir, false, "rev-parse", "--quiet", "--verify", "--end-of-options", ref+"^{commit}"); err != nil {
		return fmt.Errorf("%s has no branch, tag or commit %q", shown, ref)
	}
	return g.run(dir, false, "checkout", "--quiet", "--detach", ref+"^{commit}")
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
	cmd := exec.CommandContext(g.ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if !g.interactive {
		cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
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

// copyTree copies the folder src to dst (which must not exist): files with
// their permission bits, symlinks as symlinks (validation rejects tools
// and docs reached through them), other special files skipped. It returns
// the number and total size of the files, for the progress line.
func copyTree(ctx context.Context, src, dst string) (files int, size int64, err error) {
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			files++
			size += info.Size()
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
	return files, size, err
}

// byteSize writes n bytes for people: "512 B", "3.4 KB", "12.0 MB".
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyIfMissing(src, dst string) error {
	fi, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	return copyFile(src, dst, fi.Mode().Perm())
}

// treeDigest hashes an extension folder's content — paths, modes, file
// bytes and symlink targets — leaving out .git, the install metadata and
// the .env settings, so that two fetches of the same version compare
// equal.
func treeDigest(root string) (string, error) {
	type entry struct{ rel, kind, sum string }
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if rel == InstallMetadataFile || rel == ".env" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			entries = append(entries, entry{rel, "d", ""})
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			entries = append(entries, entry{rel, "l", link})
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			entries = append(entries, entry{rel, fmt.Sprintf("f%o", info.Mode().Perm()&0o111), hex.EncodeToString(sum[:])})
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", filepath.ToSlash(e.rel), e.kind, e.sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
