package extension

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/gemkit/gemkit/internal/agentplugin"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// gemkit's own copy of an extension's folder as the person agreed to it
// (the agreed copy) is what gemkit's sandbox shows an extension's MCP
// server at the folder's path, in place of the folder. Consent binds
// the bytes that run: checked against the folder at every start, that
// takes a walk of all of it (a stat of each of a node_modules' thousands
// of files), whose CPU a cold start on two cores pays (git show f68add0:bench/README.md,
// "Issue 45's cold start: the server started at the client's connect").
// The copy holds that promise by construction instead: made once, when
// the person agrees, from the folder, and kept only when its digest is
// the one they agreed to, in gemkit's data folder, which only gemkit
// writes (it is closed to every sandboxed process, as the pinned
// packages' trees beside it are). A start then reads the consent
// records and one file: no walk.
//
// What an edit of the folder does changes with it: the server keeps
// running the version the person agreed to until they agree again
// (list, describe and doctor say that a newer one waits), rather than
// stopping. A manifest that changed is never run against an older copy:
// the servers' commands come from the manifest as it is, so the copy
// serves only while the manifest is byte for byte the copy's.

// agreedCopyManifestLimit bounds the manifest read from a copy.
const agreedCopyManifestLimit = 4 << 20

// agreedStaleAfter is how old a copy being made must be before another
// process takes it for one left by a process that died (removed).
const agreedStaleAfter = time.Hour

// agreedCopiesDir is the folder of the copies of the extension name.
func (s *Store) agreedCopiesDir(name string) string {
	return filepath.Join(gemkitdir.Agreed(s.home), name)
}

// agreedCopyDir is the copy of name's folder with the content digest
// digest ("sha256:…"), whether it exists or not; "" for a name or
// digest that is no folder's name.
func (s *Store) agreedCopyDir(name, digest string) string {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || hex == "" || strings.ContainsAny(hex, `/\.`) || !isFolderName(name) {
		return ""
	}
	return filepath.Join(s.agreedCopiesDir(name), hex)
}

// agreedRecord is the consent record of ext when it stands for ext's
// manifest as it is now and the person's choices for its servers, and
// binds files.
func (s *Store) agreedRecord(ext *Extension) (consentRecord, bool) {
	recs, err := s.readConsent()
	if err != nil {
		return consentRecord{}, false
	}
	name := ext.Manifest.Name
	r, ok := recs.Extensions[name]
	if !ok || r.ContentDigest == "" || r.PermissionsHash != s.consentHash(name, PermissionsHash(ext.Manifest)) {
		return consentRecord{}, false
	}
	return r, true
}

// AgreedCopy returns the folder of gemkit's copy of ext as the person
// agreed to it, which a server of ext may run from in its place: when
// their consent stands for ext's manifest as it was loaded (ext.Raw)
// and their choices for its servers, the copy is whole, and its
// manifest is ext.Raw byte for byte. "" otherwise (then the folder is
// checked as it is, Consent). It reads gemkit's records and the copy's
// manifest, nothing of ext's folder.
func (s *Store) AgreedCopy(ext *Extension) string {
	if ext == nil || ext.Manifest == nil || ext.Raw == nil {
		return ""
	}
	r, ok := s.agreedRecord(ext)
	if !ok {
		return ""
	}
	dir := s.agreedCopyDir(ext.Manifest.Name, r.ContentDigest)
	if dir == "" {
		return ""
	}
	m, err := readManifestOf(dir, ext.IsPlugin())
	if err != nil || !bytes.Equal(m, ext.Raw) {
		return ""
	}
	return dir
}

// readManifestOf reads the manifest of the folder dir (a plugin's: its
// plugin.json and mcp.json, as agentplugin.ReadRaw reads them), a copy of
// gemkit's whose files are an extension's: through its Root.
func readManifestOf(dir string, plugin bool) ([]byte, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if plugin {
		return agentplugin.ReadRaw(root)
	}
	return root.ReadFile(ManifestFile, agreedCopyManifestLimit)
}

// ErrNotAgreed is KeepAgreedCopy's error for an extension whose consent
// does not stand as it is now: there is nothing agreed to copy.
var ErrNotAgreed = errors.New("the person's consent does not stand for the extension as it is now")

// KeepAgreedCopy makes gemkit's copy of ext's folder as the person
// agreed to it (AgreedCopy), unless it exists, and returns its folder.
// The folder is copied (files with their modes, links as links, what
// consent leaves out left out), the copy read as consent reads a folder,
// and kept only when its digest is the one agreed to: a file changed
// while it was copied is an error, and nothing is kept. Copies of other
// versions of ext are removed but the newest of them (a server started
// from it may still run), and copies some process left half made an
// hour ago.
func (s *Store) KeepAgreedCopy(ctx context.Context, ext *Extension) (string, error) {
	if ext == nil || ext.Manifest == nil {
		return "", ErrNotAgreed
	}
	r, ok := s.agreedRecord(ext)
	if !ok {
		return "", ErrNotAgreed
	}
	name := ext.Manifest.Name
	final := s.agreedCopyDir(name, r.ContentDigest)
	if final == "" {
		return "", fmt.Errorf("gemkit keeps no copy of an extension named %q", name)
	}
	if _, err := os.Lstat(final); err == nil {
		return final, nil
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("making gemkit's copy of %s: %w", Printable(name), err)
	}
	work, err := os.MkdirTemp(parent, ".making-")
	if err != nil {
		return "", fmt.Errorf("making gemkit's copy of %s: %w", Printable(name), err)
	}
	defer fsutil.RemoveTree(work)
	tree := filepath.Join(work, "tree")
	_, _, _, err = copyTreeAs(ctx, ext.Dir, tree, copyOptions{exactModes: true, leaveOut: leftOutOfContent})
	if err != nil {
		return "", fmt.Errorf("making gemkit's copy of %s from %s: %w", Printable(name), ext.Dir, err)
	}
	c, err := ReadContent(tree)
	if err != nil {
		return "", fmt.Errorf("reading gemkit's copy of %s: %w", Printable(name), err)
	}
	if c.Digest != r.ContentDigest {
		if special := notCopied(s.recordContent(name, r).FileList(), c.FileList()); len(special) > 0 {
			gone := "they are"
			if len(special) == 1 {
				gone = "it is"
			}
			return "", fmt.Errorf("%s's folder %s holds %s, which is neither a file nor a link (a FIFO, a socket or a device): gemkit copies only files and links, so it keeps no copy of %s until %s removed and you agree again", Printable(name), ext.Dir, strings.Join(special, ", "), Printable(name), gone)
		}
		return "", fmt.Errorf("%s's files in %s are not those you agreed to (changed since, or while gemkit copied them): agree to them as they are now, `gemkit extensions consent %s --grant`", Printable(name), ext.Dir, Printable(name))
	}
	if err := os.Rename(tree, final); err != nil {
		// Another process made it meanwhile: the same bytes.
		if _, serr := os.Lstat(final); serr != nil {
			return "", fmt.Errorf("keeping gemkit's copy of %s: %w", Printable(name), err)
		}
	}
	s.pruneAgreedCopies(name, final)
	return final, nil
}

// notCopied are the entries of agreed (a per-file list, Content.Files)
// that a copy, whose list is copied, lacks because it copies only files
// and links: FIFOs, sockets and devices, sorted.
func notCopied(agreed, copied map[string]string) []string {
	var out []string
	for rel, state := range agreed {
		if _, ok := copied[rel]; ok || state == "" {
			continue
		}
		if strings.ContainsRune("pSDc", rune(state[0])) {
			out = append(out, Printable(rel))
		}
	}
	sort.Strings(out)
	return out
}

// pruneAgreedCopies removes the copies of name but keep and the newest
// other one, and what a process left half made long ago.
func (s *Store) pruneAgreedCopies(name, keep string) {
	parent := s.agreedCopiesDir(name)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	type copyAt struct {
		path string
		at   time.Time
	}
	var others []copyAt
	for _, e := range entries {
		p := filepath.Join(parent, e.Name())
		info, err := e.Info()
		if err != nil || p == keep {
			continue
		}
		if strings.HasPrefix(e.Name(), ".making-") {
			if time.Since(info.ModTime()) > agreedStaleAfter {
				fsutil.RemoveTree(p)
			}
			continue
		}
		others = append(others, copyAt{p, info.ModTime()})
	}
	sort.Slice(others, func(i, j int) bool { return others[i].at.After(others[j].at) })
	for i, o := range others {
		if i > 0 {
			fsutil.RemoveTree(o.path)
		}
	}
}

// ForgetAgreedCopies removes every copy of the extension name (it is
// uninstalled).
func (s *Store) ForgetAgreedCopies(name string) error {
	if !isFolderName(name) {
		return nil
	}
	return fsutil.RemoveTree(s.agreedCopiesDir(name))
}
