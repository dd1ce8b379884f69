package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// A problem only in gemkit's own fields installs all the same: its
	// tools do not run (the Installed's Err says why).
	ext, err := s.loadFetched(root, md)
	if err = Refusal(err); err != nil {
		return nil, fmt.Errorf("%s cannot be installed: %w", RedactSource(req.Source), err)
	}
	name := ext.Manifest.Name
	if err := s.checkFree(name); err != nil {
		if in, gerr := s.Get(name); gerr == nil && req.Ref != "" && in.Metadata != nil && in.Metadata.Type == SourceGit {
			// Installed from git, and asked at another ref: the update
			// moves it there (Gemini CLI has no way but to uninstall).
			return nil, fmt.Errorf("an extension called %q is already installed, at %s; to move it to %s: `gemkit extensions update %s --ref %s`", name, refWords(in.Metadata.Ref), req.Ref, name, req.Ref)
		}
		return nil, err
	}
	parent := s.parentOf(ext)
	shown := s.atFinalPath(ext, s.finalDir(parent, name))
	// The check every start makes, before anyone is told consent is
	// given: files it would refuse are refused here, with what to do.
	if err := s.checkFilesAt(root, s.finalDir(parent, name)); Unbindable(err) {
		return nil, fmt.Errorf("%s is not installed: %w", Printable(name), err)
	}
	if err := ask(ctx, req.Consent, ConsentPrompt{Action: "Install", Extension: shown, Lines: ConsentText(shown, "Installing")}); err != nil {
		return nil, err
	}
	if err := writeMetadata(root, md); err != nil {
		return nil, err
	}
	if err := s.commit(ctx, root, parent, name); err != nil {
		return nil, err
	}
	if err := s.recordConsentFor(name, ext.Manifest, filepath.Join(parent, name)); err != nil {
		fsutil.RemoveTree(filepath.Join(parent, name))
		return nil, err
	}
	return s.Get(name)
}

// refWords names a git install's ref, its remote's HEAD when none.
func refWords(ref string) string {
	if ref == "" {
		return "its repository's default branch"
	}
	return Printable(ref)
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
	if err = Refusal(err); err != nil {
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
	if err := s.commit(ctx, entry, s.parentOf(ext), name); err != nil {
		return nil, err
	}
	// The files as checked a moment ago, read again only if that failed.
	if err == nil {
		err = s.RecordConsentContent(name, PermissionsHash(ext.Manifest), checked)
	} else {
		err = s.recordConsentFor(name, ext.Manifest, real)
	}
	if err != nil {
		fsutil.RemoveTree(filepath.Join(s.parentOf(ext), name))
		return nil, err
	}
	return s.Get(name)
}

// finalDir is the real path an extension called name will have once
// installed in parent (the extensions folder, or PluginsDir): what
// ${extensionPath} will stand for.
func (s *Store) finalDir(parent, name string) string {
	dir := parent
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Join(dir, name)
}

// atFinalPath returns ext, checked in its staging folder, as it will be
// once moved to dir: the manifest expanded again with ${extensionPath}
// standing for dir, and the context files under dir. The consent text
// is built from it, so it names the paths that will exist, not the
// staging copy that is about to disappear; what it reads of the files
// (hooks, policies, agents, skills) it reads in the staging copy, which
// is what the person agrees to (Root): at dir, an install found nothing
// yet, and an update the version installed.
func (s *Store) atFinalPath(ext *Extension, dir string) *Extension {
	if ext.IsPlugin() {
		// Nothing of its manifest names its folder.
		c := *ext
		c.Dir, c.files = dir, ext.Dir
		return &c
	}
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
	c.Dir, c.Manifest, c.ContextFiles, c.files = dir, m, nil, ext.Dir
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
	if _, err := lstatIn(root, ManifestFile); errors.Is(err, fs.ErrNotExist) && !hasPluginManifest(root) {
		if md.Type == SourceGit && md.Subdir == "" {
			return nil, subdirError("%s has no %s; if the extension is in a sub-folder of the repository, name that folder", where, ManifestFile)
		}
		return nil, fmt.Errorf("%s has no %s (nor an Agent Plugins plugin.json)", where, ManifestFile)
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
