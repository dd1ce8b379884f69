package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Update fetches an installed extension again, as the install does, and
// asks consent again only for what changed of what the person agreed to
// (ConsentChanges): apart from the install, whose first consent covers
// everything.

// UpdateRequest says how to update.
type UpdateRequest struct {
	// Consent is asked only when permissions, tools or MCP servers
	// changed; nil refuses such an update.
	Consent     ConsentFunc
	Progress    io.Writer
	Interactive bool
	// Ref, when not "", moves a git install to this branch, tag or
	// commit: fetched from there, and recorded as the ref later updates
	// follow (as an install with --ref records it, which Gemini CLI's
	// update follows too).
	Ref string
	// Packages, if non-nil, pins the packages the new version's
	// package-runner servers run before consent is asked, so that the
	// one question shows what the update will run, not the new commands
	// with the old pins. It is called, once the new version is checked,
	// with that version in its staging folder and the extension's
	// server choice. Pins that changed make the update ask even when
	// nothing else would; agreed to, they are recorded once the new
	// files are in place, then the consent to both. An update refused,
	// or failed before the new files are in place, records none of it.
	Packages func(ctx context.Context, staged *Extension, choice ServerChoice) (PackageUpdate, error)
}

// PackageUpdate is what pinning the packages of a new version came to
// (UpdateRequest.Packages).
type PackageUpdate struct {
	// Changed says Pins differ from the pins recorded, and are to be
	// recorded with the update's consent (none: the new version has no
	// package-runner server left).
	Changed bool
	Pins    map[string]Pin
	// Lines say what changed, shown with the consent text when Changed.
	Lines []string
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
// checked and agreed to, and the swap is two renames. The packages its
// package-runner servers are to run (req.Packages) are pinned before the
// question, which shows them, and recorded after the swap, before the
// consent. The extension's .env settings file is kept. An update that
// changes nothing asks nothing and leaves the consent record as it was.
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
	if err := updatableSource(in, req.Ref); err != nil {
		return nil, err
	}
	if md.Type == SourceLink {
		res.Linked, res.UpToDate, res.NewVersion = true, true, res.OldVersion
		return res, nil
	}
	moved := req.Ref != "" && req.Ref != md.Ref
	if req.Ref != "" {
		to := *md
		to.Ref = req.Ref
		md = &to
	}
	stage, err := s.newStaging("update")
	if err != nil {
		return nil, err
	}
	defer fsutil.RemoveTree(stage)
	root, ext, err := s.fetchUpdate(ctx, in, old, md, stage, req)
	if err != nil {
		return nil, err
	}
	if was := filepath.Dir(in.Entry) == s.PluginsDir(); was != ext.IsPlugin() {
		// The two kinds live in different folders, and Gemini CLI runs
		// one of them: an update does not turn one into the other.
		kinds := map[bool]string{false: "a Gemini CLI extension (" + ManifestFile + ")", true: "an Agent Plugins plugin (plugin.json alone)"}
		return nil, fmt.Errorf("%s is not updated: it is %s, and its new version is %s; uninstall it, then install the new version", Printable(in.Name), kinds[was], kinds[ext.IsPlugin()])
	}
	res.NewVersion = ext.Manifest.Version
	if in.Extension != nil {
		a, errA := treeDigest(in.Extension.Dir)
		b, errB := treeDigest(root)
		if errA == nil && errB == nil && a == b {
			res.UpToDate = true
			if moved {
				// The same files at the new ref: only the ref it follows
				// changes.
				return res, writeMetadata(in.Entry, md)
			}
			return res, nil
		}
	}
	if old == nil {
		old = &Manifest{}
	}
	res.Changes = ConsentChanges(old, ext.Unexpanded())
	asked := updateFileChanges(in, root, res) || len(res.Changes) > 0
	filesErr := s.checkFilesAt(root, in.Entry)
	if asked && Unbindable(filesErr) {
		return nil, fmt.Errorf("%s is not updated: %w", Printable(in.Name), filesErr)
	}
	// The consent hash binds the pins (consentHash): the new version's
	// are pinned now, so that the question shows them and the consent
	// recorded covers them. An unreadable choice shows no pins; its hash
	// then matches no record, so nothing is taken as agreed.
	choice, _ := s.ServerChoice(res.Name)
	var pkgs PackageUpdate
	if req.Packages != nil {
		if pkgs, err = req.Packages(ctx, ext, choice); err != nil {
			return nil, fmt.Errorf("%s is not updated: %w", Printable(res.Name), err)
		}
		if pkgs.Changed && !asked && Unbindable(filesErr) {
			return nil, fmt.Errorf("%s is not updated: %w", Printable(in.Name), filesErr)
		}
		if pkgs.Changed {
			asked = true
			choice.Packages = pkgs.Pins
		}
	}
	if asked {
		if err := s.askUpdate(ctx, req.Consent, in, ext, root, res, choice, pkgs); err != nil {
			return nil, err
		}
	}
	if err := s.putUpdate(ctx, in, ext, root, stage, md, res, pkgs, asked); err != nil {
		return nil, err
	}
	return res, nil
}

// updatableSource says why the source in's metadata records cannot be
// updated from (with ref, when not ""), or nil. A linked extension can:
// it is always current.
func updatableSource(in *Installed, ref string) error {
	md := in.Metadata
	switch {
	case md == nil:
		return fmt.Errorf("%s has no %s, so its source is unknown; uninstall it and install it again", in.Name, InstallMetadataFile)
	case md.Type == SourceLink:
		return nil
	case md.Type == SourceGitHubRelease:
		return fmt.Errorf("%s was installed from a GitHub release by Gemini CLI; update it with `gemini extensions update %s`", in.Name, in.Name)
	case md.Type != SourceGit && md.Type != SourceLocal:
		return fmt.Errorf("%s has the unknown source type %q in %s", in.Name, md.Type, InstallMetadataFile)
	case ref != "" && md.Type != SourceGit:
		return fmt.Errorf("%s was installed from the folder %s, which has no ref: --ref moves an extension installed from git", in.Name, md.Source)
	}
	return nil
}

// fetchUpdate fetches the new version from md's source into stage and
// loads it, refusing one that is not installable or that now holds an
// extension of another name than old's.
func (s *Store) fetchUpdate(ctx context.Context, in *Installed, old *Manifest, md *InstallMetadata, stage string, req UpdateRequest) (string, *Extension, error) {
	root, err := s.fetch(ctx, md, stage, req.Progress, req.Interactive)
	if errors.Is(err, fs.ErrNotExist) && md.Type == SourceLocal {
		return "", nil, fmt.Errorf("its source folder %s no longer exists; uninstall it and install it from where it is now", md.Source)
	}
	if err != nil {
		return "", nil, err
	}
	ext, err := s.loadFetched(root, md)
	if err = Refusal(err); err != nil {
		return "", nil, fmt.Errorf("the new version of %s cannot be installed: %w", in.Name, err)
	}
	if old != nil && ext.Manifest.Name != old.Name {
		return "", nil, fmt.Errorf("the source of %s now holds an extension called %q; uninstall %s and install that instead", old.Name, ext.Manifest.Name, old.Name)
	}
	return root, ext, nil
}

// updateFileChanges adds to res.Changes the files that differ between
// the installed version and the one fetched into root, and says whether
// the content consent binds changed (true when either cannot be read).
func updateFileChanges(in *Installed, root string, res *UpdateResult) bool {
	if in.Extension == nil {
		return true
	}
	was, errA := ReadContent(in.Extension.Dir)
	now, errB := ReadContent(root)
	if errA != nil || errB != nil {
		return true
	}
	if files := ChangedFiles(was, now); len(files) > 0 {
		res.Changes = append(res.Changes, Change{Area: "files", What: "files: " + namedChanges(files)})
	}
	return was.Digest != now.Digest
}

// askUpdate asks consent to the new version: its consent text at the
// path it will have, what changed since the person agreed, and what
// changed of its servers' packages.
func (s *Store) askUpdate(ctx context.Context, consent ConsentFunc, in *Installed, ext *Extension, root string, res *UpdateResult, choice ServerChoice, pkgs PackageUpdate) error {
	final := s.finalDir(filepath.Dir(in.Entry), in.Name)
	if in.Extension != nil {
		final = in.Extension.Dir
	}
	shown := s.atFinalPath(ext, final)
	lines := ConsentTextWith(shown, "Updating", choice)
	lines[0] = Printable(fmt.Sprintf("Updating extension %q from version %s to %s.", res.Name, res.OldVersion, res.NewVersion))
	if len(res.Changes) > 0 {
		lines = append(lines, "", "What changed since you last agreed:")
		for _, c := range res.Changes {
			lines = append(lines, "  - "+c.What)
		}
	}
	if pkgs.Changed && len(pkgs.Lines) > 0 {
		lines = append(lines, "", "What changed in its servers' packages since you agreed:")
		for _, l := range pkgs.Lines {
			lines = append(lines, "  "+l)
		}
	}
	lines = append(lines, "", "The new files are in "+Printable(root)+" until this command ends.")
	return ask(ctx, consent, ConsentPrompt{Action: "Update", Extension: shown, Lines: lines, Changes: res.Changes})
}

// putUpdate puts the agreed new version in root in place of the old one,
// keeping its settings, then records its pins and, when asked, consent.
func (s *Store) putUpdate(ctx context.Context, in *Installed, ext *Extension, root, stage string, md *InstallMetadata, res *UpdateResult, pkgs PackageUpdate, asked bool) error {
	if err := copyIfMissing(in.Entry, root, ".env"); err != nil {
		return fmt.Errorf("keep the settings of %s: %w", in.Name, err)
	}
	if err := writeMetadata(root, md); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.swap(root, in.Entry, stage); err != nil {
		return err
	}
	// From the swap on, the consent recorded is to the old files, so
	// nothing of the new ones runs until it is recorded again. The new
	// pins go first: consent recorded before them would be to the old
	// pins, and count as given to the new files with them.
	if pkgs.Changed {
		if err := s.UpdateServerChoice(res.Name, func(c *ServerChoice, _ *[]string) { c.Packages = pkgs.Pins }); err != nil {
			return halfUpdated(res, "the packages pinned for its servers were not recorded", err)
		}
	}
	// The person agreed to these files and permissions just now; an
	// update that changed nothing the record covers leaves it as it was,
	// with the time it was given.
	if asked {
		if err := s.recordConsentFor(res.Name, ext.Manifest, in.Entry); err != nil {
			return halfUpdated(res, "your consent was not recorded", err)
		}
	}
	return nil
}

// halfUpdated is the error of an update whose files were swapped in but
// whose records were not all written (what, err): it says where things
// stand, never "not updated", and how to agree again. The records are
// written so that a missing one leaves no consent to what was not
// recorded.
func halfUpdated(res *UpdateResult, what string, err error) error {
	name := Printable(res.Name)
	return fmt.Errorf("%s is now version %s, but %s (%w): nothing of it runs that you have not agreed to, and what you were just asked about runs once you agree again with `gemkit extensions consent %s --grant`",
		name, Printable(res.NewVersion), what, err, name)
}
