package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// ConsentPrompt is what a ConsentFunc shows before the person decides.
type ConsentPrompt struct {
	// Action is "Install", "Link" or "Update".
	Action string
	// Extension is the extension as it will be once in place: checked in
	// a staging folder, but with Dir and ${extensionPath} naming its
	// final folder.
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
	// AutoUpdate and AllowPreRelease are recorded in the install metadata
	// for Gemini CLI, which reads them as its own install's --auto-update
	// and --pre-release (gemini-cli 0.61.0
	// packages/cli/src/commands/extensions/install.ts); gemkit updates only
	// when asked.
	AutoUpdate, AllowPreRelease bool
}

// RequestError is an InstallRequest field that cannot be used as given:
// Field names it ("Subdir" or "Ref"), and the message says what is wrong
// in the request's terms. A command adds the flag that set the field.
type RequestError struct {
	Field string
	Err   error
}

func (e *RequestError) Error() string { return e.Err.Error() }

func (e *RequestError) Unwrap() error { return e.Err }

// subdirError is a RequestError of the Subdir field.
func subdirError(format string, args ...any) error {
	return &RequestError{Field: "Subdir", Err: fmt.Errorf(format, args...)}
}

// isBareRepository reports whether dir looks like a git repository
// without a working tree (git init --bare, or a .git folder): a HEAD
// file, objects and refs folders, and no manifest. It only looks at the
// names, running nothing in a folder that is not the person's own yet.
func isBareRepository(dir string) bool {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	if _, err := root.Lstat(ManifestFile); err == nil {
		return false
	}
	for name, folder := range map[string]bool{"HEAD": false, "objects": true, "refs": true} {
		fi, err := root.Lstat(name)
		if err != nil || fi.IsDir() != folder {
			return false
		}
	}
	return true
}

// bareRepositoryError says how to install from a bare repository given
// as a folder: Gemini CLI 0.61 copies any local path as a folder
// (inferInstallMetadata, packages/cli/src/config/extension-manager.ts),
// which would find no manifest in it; a file:// URL clones it.
func bareRepositoryError(dir, subdir string) error {
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	fix := "gemkit extensions install " + u
	if subdir != "" {
		fix += " --path " + subdir
	}
	return fmt.Errorf("%s is a git repository without a working tree (bare), not an extension's folder; install from it as a git source: %s (add --ref BRANCH for a branch other than the one its HEAD names)", dir, fix)
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
	md := &InstallMetadata{Source: req.Source, AutoUpdate: req.AutoUpdate, AllowPreRelease: req.AllowPreRelease}
	if IsGitURL(req.Source) {
		md.Type, md.Ref, md.Subdir = SourceGit, req.Ref, subdir
	} else {
		if req.Ref != "" {
			return nil, &RequestError{Field: "Ref", Err: fmt.Errorf("a ref applies to git sources only, and %s is a local folder", req.Source)}
		}
		abs, err := filepath.Abs(filepath.Join(req.Source, subdir))
		if err != nil {
			return nil, err
		}
		if repo, err := filepath.Abs(req.Source); err == nil && isBareRepository(repo) {
			return nil, bareRepositoryError(repo, subdir)
		}
		md.Type, md.Source = SourceLocal, abs
	}
	stage, err := s.newStaging("install")
	if err != nil {
		return nil, err
	}
	defer fsutil.RemoveTree(stage)
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
	shown := s.atFinalPath(ext, s.finalDir(name))
	// The check every start makes, before anyone is told consent is
	// given: files it would refuse are refused here, with what to do.
	if err := s.checkFilesAt(root, s.finalDir(name)); Unbindable(err) {
		return nil, fmt.Errorf("%s is not installed: %w", Printable(name), err)
	}
	if err := ask(ctx, req.Consent, ConsentPrompt{Action: "Install", Extension: shown, Lines: ConsentText(shown, "Installing")}); err != nil {
		return nil, err
	}
	if err := writeMetadata(root, md); err != nil {
		return nil, err
	}
	if err := s.commit(ctx, root, name); err != nil {
		return nil, err
	}
	if err := s.recordConsentFor(name, ext.Manifest, filepath.Join(s.Dir(), name)); err != nil {
		fsutil.RemoveTree(filepath.Join(s.Dir(), name))
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
	checked, err := s.CheckFiles(real)
	if Unbindable(err) {
		return nil, fmt.Errorf("%s is not linked: %w", Printable(name), err)
	}
	if err := ask(ctx, consent, ConsentPrompt{Action: "Link", Extension: ext, Lines: ConsentText(ext, "Linking")}); err != nil {
		return nil, err
	}
	stage, err := s.newStaging("link")
	if err != nil {
		return nil, err
	}
	defer fsutil.RemoveTree(stage)
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
	// The files as checked a moment ago, read again only if that failed.
	if err == nil {
		err = s.RecordConsentContent(name, PermissionsHash(ext.Manifest), checked)
	} else {
		err = s.recordConsentFor(name, ext.Manifest, real)
	}
	if err != nil {
		fsutil.RemoveTree(filepath.Join(s.Dir(), name))
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
	if m := in.Manifest(); m != nil && m.Name != in.Name && !s.otherCarries(in, m.Name) {
		names = append(names, m.Name)
	}
	// A hold in Gemini CLI goes with the extension: the rules it added
	// under other names too.
	if _, err := s.ReleaseInGemini(in.Name); err != nil {
		return err
	}
	var cache string
	if in.Extension != nil {
		cache = s.digestCacheOf(in.Extension.Dir)
	}
	if err := s.removeEntry(in, names); err != nil {
		return err
	}
	if cache != "" {
		// It only ever spares hashing; one left behind is harmless.
		_ = os.Remove(cache)
	}
	for _, n := range names {
		if err := s.ForgetConsent(n); err != nil {
			return err
		}
	}
	return nil
}

// otherCarries reports whether an entry other than in holds an extension
// called name: removing a copied folder must keep the enablement rules
// and consent of the extension it duplicated.
func (s *Store) otherCarries(in *Installed, name string) bool {
	all, err := s.List()
	if err != nil {
		return true
	}
	for _, o := range all {
		if o.Entry != in.Entry && o.Manifest() != nil && o.Manifest().Name == name {
			return true
		}
	}
	return false
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
// from and replaces it. Whenever the update changes the extension's files
// (its code, or only its manifest) consent is asked again, as for an
// install, with what changed: permissions, tools, MCP servers, and which
// files. Consent is bound to the files (Store.Consent), and a run after a
// silent update would execute code nobody agreed to; Gemini CLI 0.61 asks
// again only when its consent text changes (maybeRequestConsentOrFail,
// packages/cli/src/config/extensions/consent.ts), but its consent never
// covered the code. The old version stays in place until the new one is
// checked and agreed to, and the swap is two renames. The extension's
// .env settings file is kept. An update that changes nothing asks
// nothing and leaves the consent record as it was.
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
	defer fsutil.RemoveTree(stage)
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
	contentChanged := true
	if in.Extension != nil {
		was, errA := ReadContent(in.Extension.Dir)
		now, errB := ReadContent(root)
		if errA == nil && errB == nil {
			contentChanged = was.Digest != now.Digest
			if files := ChangedFiles(was, now); len(files) > 0 {
				res.Changes = append(res.Changes, Change{Area: "files", What: "files: " + namedChanges(files)})
			}
		}
	}
	asked := len(res.Changes) > 0 || contentChanged
	if err := s.checkFilesAt(root, in.Entry); asked && Unbindable(err) {
		return nil, fmt.Errorf("%s is not updated: %w", Printable(in.Name), err)
	}
	if asked {
		final := s.finalDir(in.Name)
		if in.Extension != nil {
			final = in.Extension.Dir
		}
		shown := s.atFinalPath(ext, final)
		choice, _ := s.ServerChoice(res.Name)
		lines := append(ConsentTextWith(shown, "Updating", choice), "", "What changed since you last agreed:")
		lines[0] = Printable(fmt.Sprintf("Updating extension %q from version %s to %s.", res.Name, res.OldVersion, res.NewVersion))
		for _, c := range res.Changes {
			lines = append(lines, "  - "+c.What)
		}
		lines = append(lines, "", "The new files are in "+Printable(root)+" until this command ends: look at them before you agree.")
		if err := ask(ctx, req.Consent, ConsentPrompt{Action: "Update", Extension: shown, Lines: lines, Changes: res.Changes}); err != nil {
			return nil, err
		}
	}
	if err := copyIfMissing(in.Entry, root, ".env"); err != nil {
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
	// The person agreed to these files and permissions just now; an
	// update that changed nothing the record covers leaves it as it was,
	// with the time it was given.
	if asked {
		if err := s.recordConsentFor(res.Name, ext.Manifest, in.Entry); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// finalDir is the real path an extension called name will have once
// installed: what ${extensionPath} will stand for.
func (s *Store) finalDir(name string) string {
	dir := s.Dir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Join(dir, name)
}

// atFinalPath returns ext, checked in its staging folder, as it will be
// once moved to dir: the manifest expanded again with ${extensionPath}
// standing for dir, and the context files under dir. The consent text
// is built from it, so it names the paths that will exist, not the
// staging copy that is about to disappear.
func (s *Store) atFinalPath(ext *Extension, dir string) *Extension {
	vars := Variables{ExtensionPath: dir, WorkspacePath: s.workspace}
	expanded, err := vars.ExpandJSON(ext.Raw)
	if err != nil {
		return ext
	}
	m, _, err := ParseManifest(expanded)
	if err != nil {
		return ext
	}
	c := *ext
	c.Dir, c.Manifest, c.ContextFiles = dir, m, nil
	for _, f := range ext.ContextFiles {
		c.ContextFiles = append(c.ContextFiles, filepath.Join(dir, relTo(ext.Dir, f)))
	}
	return &c
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
	if _, err := lstatIn(root, ManifestFile); errors.Is(err, fs.ErrNotExist) {
		if md.Type == SourceGit && md.Subdir == "" {
			return nil, subdirError("%s has no %s; if the extension is in a sub-folder of the repository, name that folder", where, ManifestFile)
		}
		return nil, fmt.Errorf("%s has no %s", where, ManifestFile)
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
		trash, err := s.newStaging("remove")
		if err != nil {
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
		if err := os.Rename(in.Entry, filepath.Join(trash, "old")); err != nil {
			os.Remove(trash)
			return fmt.Errorf("uninstall %s: %w", in.Name, err)
		}
		if err := fsutil.RemoveTree(trash); err != nil {
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
