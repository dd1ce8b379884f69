package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// consentFile holds the permissions each extension was granted:
// <home>/.gemini/gemkit/consent.json, mode 0600. Gemini CLI has no such
// file; it asks at install time only.
const consentFile = "consent.json"

type consentRecords struct {
	Version    int                      `json:"version"`
	Extensions map[string]consentRecord `json:"extensions"`
}

type consentRecord struct {
	PermissionsHash string `json:"permissionsHash"`
	// ContentDigest is the ContentDigest of the extension's folder the
	// person agreed to run; records written before it existed lack it.
	ContentDigest string    `json:"contentDigest,omitempty"`
	GrantedAt     time.Time `json:"grantedAt"`
	// Files is Content.Files of that folder as records written before
	// the list moved to its own file (consentfiles.go) held it; it is
	// read, and moved to that file at the next write (writeConsent).
	Files map[string]string `json:"files,omitempty"`
}

// content is the Content the record of name binds consent to; its
// per-file list is read from its own file when asked for (FileList).
func (s *Store) recordContent(name string, r consentRecord) Content {
	c := Content{Digest: r.ContentDigest, Files: r.Files}
	if c.Files == nil && c.Digest != "" {
		c.loadFiles = s.agreedFiles(name, c.Digest)
	}
	return c
}

func (s *Store) consentPath() string { return filepath.Join(s.stateDir(), consentFile) }

func (s *Store) readConsent() (consentRecords, error) {
	recs := consentRecords{Version: 1}
	err := readRecords(s.consentPath(), "consent records", "delete it to be asked for consent again", &recs)
	if recs.Extensions == nil {
		recs.Extensions = map[string]consentRecord{}
	}
	return recs, err
}

// ConsentGranted reports whether the person agreed to the extension name
// running with the permissions whose PermissionsHash is hash. An
// unreadable record counts as no consent.
func (s *Store) ConsentGranted(name, hash string) bool {
	recs, err := s.readConsent()
	if err != nil {
		return false
	}
	r, ok := recs.Extensions[name]
	return ok && r.PermissionsHash == s.consentHash(name, hash)
}

// ConsentContent reports whether the person agreed to the extension name
// running with the permissions hashed as hash, and the files they agreed
// to (an empty Digest for a record older than content binding, nil Files
// for one older than the per-file list).
func (s *Store) ConsentContent(name, hash string) (agreed Content, granted bool) {
	recs, err := s.readConsent()
	if err != nil {
		return Content{}, false
	}
	r, ok := recs.Extensions[name]
	if !ok || r.PermissionsHash != s.consentHash(name, hash) {
		return Content{}, false
	}
	return s.recordContent(name, r), true
}

// AgreedBefore returns the files the person agreed to for the extension
// name, whatever permissions the record is for, and whether there is a
// record: a question asked because the permissions changed says that
// consent was given to others, and which files changed since.
func (s *Store) AgreedBefore(name string) (agreed Content, ok bool) {
	recs, err := s.readConsent()
	if err != nil {
		return Content{}, false
	}
	r, ok := recs.Extensions[name]
	if !ok {
		return Content{}, false
	}
	return s.recordContent(name, r), true
}

// RecordConsentContent is RecordConsent that also binds the consent to
// the extension's files as ReadContent found them: their digest, and the
// per-file list that later names what changed.
func (s *Store) RecordConsentContent(name, hash string, c Content) error {
	hash = s.consentHash(name, hash)
	return s.updateConsent(func(recs *consentRecords) error {
		// The list first: a record is never newer than its list.
		if err := s.writeConsentFiles(name, c); err != nil {
			return err
		}
		recs.Extensions[name] = consentRecord{PermissionsHash: hash, ContentDigest: c.Digest, GrantedAt: time.Now().UTC().Truncate(time.Second)}
		return nil
	})
}

// recordConsentFor records consent to ext as found in dir, its permissions
// and its files; a folder that cannot be hashed records the permissions
// only (the first run then asks again).
func (s *Store) recordConsentFor(name string, m *Manifest, dir string) error {
	c, err := ReadContent(dir)
	if err != nil {
		c = Content{}
	}
	return s.RecordConsentContent(name, PermissionsHash(m), c)
}

// CheckFiles reads the extension folder dir as consent binds it, through
// the digest cache, and says whether consent can bind it: an error that
// is a *TooLargeError or a *BindError says why not and what to do, any
// other one that the folder could not be read. It is the one check that
// every path to consent (install, link, update, consent --grant, the
// switch) and every start of an extension's MCP server makes, so that
// consent is never said to be given to files a start would refuse.
func (s *Store) CheckFiles(dir string) (Content, error) {
	c, err := s.ReadContent(dir)
	if err != nil {
		return Content{}, err
	}
	return c, c.Bindable(dir, s.writableDirs())
}

// checkFilesAt is CheckFiles of a folder about to become the extension
// in final (a staging folder), without the digest cache, its errors
// naming final.
func (s *Store) checkFilesAt(dir, final string) error {
	c, err := ReadContent(dir)
	if err == nil {
		err = c.Bindable(final, s.writableDirs())
	}
	var tl *TooLargeError
	if errors.As(err, &tl) {
		tl.Dir = final
		if tl.File != "" {
			if rel, rerr := filepath.Rel(dir, tl.File); rerr == nil {
				tl.File = filepath.Join(final, rel)
			}
		}
	}
	return err
}

// writableDirs are the folders of WithWritable, nil without it.
func (s *Store) writableDirs() []string {
	if s.writable == nil {
		return nil
	}
	return s.writable()
}

// Unbindable says whether err, from CheckFiles, is files consent cannot
// bind (too many, too large, another name, a link into a folder others
// write) rather than a failure to read them.
func Unbindable(err error) bool {
	var tl *TooLargeError
	var be *BindError
	return errors.As(err, &tl) || errors.As(err, &be)
}

// RecordConsent remembers that the person agreed to the extension name
// running with the permissions hashed as hash, replacing any earlier
// record. The file is written atomically with mode 0600.
//
// Every consent method takes the permissions hash (PermissionsHash) and
// binds it to what the person allowed the extension's MCP servers
// beyond the default profile (Widening), so a widening asks again like a
// change of permissions.
func (s *Store) RecordConsent(name, hash string) error {
	hash = s.consentHash(name, hash)
	return s.updateConsent(func(recs *consentRecords) error {
		recs.Extensions[name] = consentRecord{PermissionsHash: hash, GrantedAt: time.Now().UTC().Truncate(time.Second)}
		return removeConsentFiles(s.consentFilesPath(name))
	})
}

// ForgetConsent removes the consent record of name, so that a later
// install asks again, and gemkit's copies of it as agreed to
// (AgreedCopy), which nothing runs without the record.
func (s *Store) ForgetConsent(name string) error {
	err := s.updateConsent(func(recs *consentRecords) error {
		delete(recs.Extensions, name)
		return removeConsentFiles(s.consentFilesPath(name))
	})
	if err != nil {
		return err
	}
	return s.ForgetAgreedCopies(name)
}

// updateConsent changes the consent records under the store's lock; a
// change that fails writes nothing more.
func (s *Store) updateConsent(change func(*consentRecords) error) error {
	return update(s, s.readConsent, change, s.writeConsent)
}

// writeConsent writes the records; a per-file list still held in one
// (written before the lists had files of their own) moves to its file
// first, so that consent.json, read at every start, sheds it.
func (s *Store) writeConsent(recs consentRecords) error {
	for name, r := range recs.Extensions {
		if r.Files == nil || r.ContentDigest == "" {
			continue
		}
		if err := s.writeConsentFiles(name, Content{Digest: r.ContentDigest, Files: r.Files}); err != nil {
			return err
		}
		r.Files = nil
		recs.Extensions[name] = r
	}
	return writeRecords(s.consentPath(), "record consent", recs)
}

// readRecords reads one of gemkit's own JSON records in its state
// folder (~/.gemini/gemkit, made 0700) into v; a missing file leaves v
// as it is. A damaged one is an error naming it, what it holds (what)
// and the fix.
func readRecords(path, what, fix string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s is damaged (%v); %s", path, err, fix)
	}
	return nil
}

// writeRecords writes v as one of gemkit's own records, 0600 and
// atomically; doing says what failed.
func writeRecords(path, doing string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return nil
}

// ConsentState is where the person's consent to an extension stands, as
// `gemkit extensions consent` shows it.
type ConsentState struct {
	// Granted: a record exists for these permissions and these files.
	Granted bool
	// Recorded: a record exists at all; GrantedAt is when it was made.
	Recorded  bool
	GrantedAt time.Time
	// PermissionsChanged: the record is for other permissions.
	PermissionsChanged bool
	// FilesChanged: the record is for these permissions but other files
	// (or predates binding consent to files); Notice says which files
	// (ContentNotice), also when the permissions changed with them.
	FilesChanged bool
	Notice       string
	// Hash and Content are the extension's current permissions hash and
	// files, what a grant records.
	Hash    string
	Content Content
	// Unbound says why consent cannot bind the extension's files as
	// they are (CheckFiles: too many or too large, a file with another
	// name, a link into a folder others write), with what to do: no
	// grant is recorded and nothing of it runs until that is fixed.
	// Granted is then false.
	Unbound error
}

// Consent returns where consent to ext stands, comparing its record with
// ext's permissions and files as they are now. It runs nothing. The
// files are read through the store's digest cache (Store.ReadContent):
// `gemkit mcp` asks at every start of an extension's server.
func (s *Store) Consent(ext *Extension) (ConsentState, error) {
	now, err := s.CheckFiles(ext.Dir)
	return s.ConsentTo(ext, now, err)
}

// ConsentTo is Consent with the extension's files as CheckFiles(ext.Dir)
// returned them (now and err), for a caller that knows they have not
// changed since: a warm hook server, which watches the folder.
func (s *Store) ConsentTo(ext *Extension, now Content, err error) (ConsentState, error) {
	st := ConsentState{Hash: PermissionsHash(ext.Manifest)}
	switch {
	case Unbindable(err):
		st.Unbound = err
	case err != nil:
		return st, err
	}
	st.Content = now
	recs, err := s.readConsent()
	if err != nil {
		return st, err
	}
	r, ok := recs.Extensions[ext.Manifest.Name]
	if !ok {
		return st, nil
	}
	st.Recorded, st.GrantedAt = true, r.GrantedAt
	switch {
	case r.PermissionsHash != s.consentHash(ext.Manifest.Name, st.Hash):
		st.PermissionsChanged = true
		if now.Digest != "" && r.ContentDigest != "" && r.ContentDigest != now.Digest {
			// The files changed with them (the manifest at least):
			// named, as when only files changed.
			st.Notice = ContentNotice(s.recordContent(ext.Manifest.Name, r), now, ext.Dir)
		}
	case now.Digest == "":
		// Too large to hash: what changed cannot be said.
		st.FilesChanged = r.ContentDigest != ""
	case r.ContentDigest != now.Digest:
		st.FilesChanged = true
		st.Notice = ContentNotice(s.recordContent(ext.Manifest.Name, r), now, ext.Dir)
	default:
		st.Granted = st.Unbound == nil
	}
	return st, nil
}
