package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// The per-file list a consent record binds (Content.Files) is kept
// beside consent.json, one file per extension in the state folder
// (~/.gemini/gemkit/consent-files, 0700; each file 0600, written
// atomically), not in it. consent.json is read at every tool run and
// every start of an extension's MCP server, and the list of an extension
// that ships a node_modules is over half a megabyte of JSON: decoding it
// each time cost a start more than the rest of its consent check. The
// list is needed only to name what changed once a digest no longer
// matches, and is read then.
const consentFilesDir = "consent-files"

// consentFiles is one extension's per-file list, with the digest of the
// files it lists: a list whose digest is not the record's (a record
// written by a later grant that failed to write its list) is not used.
type consentFiles struct {
	ContentDigest string            `json:"contentDigest"`
	Files         map[string]string `json:"files"`
}

// consentFilesPath is the per-file list of the extension name, named by
// the SHA-256 of the name so that no name the extension chose becomes a
// path.
func (s *Store) consentFilesPath(name string) string {
	h := sha256.Sum256([]byte(name))
	return filepath.Join(s.stateDir(), consentFilesDir, hex.EncodeToString(h[:16])+".json")
}

// writeConsentFiles records the per-file list of c for name; a Content
// without one removes any list kept.
func (s *Store) writeConsentFiles(name string, c Content) error {
	path := s.consentFilesPath(name)
	files := c.FileList()
	if files == nil {
		return removeConsentFiles(path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeRecords(path, "record the files consented to", consentFiles{ContentDigest: c.Digest, Files: files})
}

func removeConsentFiles(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// agreedFiles is the loader of the per-file list of the record of name
// whose digest is digest: nil when the list is missing, damaged or for
// other files.
func (s *Store) agreedFiles(name, digest string) func() map[string]string {
	return func() map[string]string {
		var cf consentFiles
		if err := readRecords(s.consentFilesPath(name), "", "", &cf); err != nil || cf.ContentDigest != digest {
			return nil
		}
		return cf.Files
	}
}
