package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Bounds of ContentDigest: an extension folder past them is not one whose
// code a person could have looked at, and hashing it on every run would
// cost too much.
const (
	maxContentFiles = 20000
	maxContentBytes = 512 << 20
)

// ContentDigest hashes the files of an extension folder: every regular
// file's path, mode and content, and every symlink's target, in path
// order. Consent binds to it as well as to the permissions, so that code
// changed since the person agreed (a linked source edited, a tool script
// rewritten) is shown and asked about again. The settings file (.env),
// whose values the person sets, gemkit's install metadata and .git are
// left out.
func ContentDigest(dir string) (string, error) {
	type entry struct {
		rel  string
		mode fs.FileMode
		path string
	}
	var entries []entry
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == ".env" || rel == InstallMetadataFile {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			total += info.Size()
		}
		entries = append(entries, entry{rel: filepath.ToSlash(rel), mode: info.Mode(), path: path})
		if len(entries) > maxContentFiles || total > maxContentBytes {
			return fmt.Errorf("more than %d files or %d MiB", maxContentFiles, maxContentBytes>>20)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hashing the extension's files in %s: %w", dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%q %o\n", e.rel, e.mode)
		switch {
		case e.mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(e.path)
			if err != nil {
				return "", fmt.Errorf("hashing the extension's files: %w", err)
			}
			fmt.Fprintf(h, "-> %q\n", target)
		case e.mode.IsRegular():
			f, err := os.Open(e.path)
			if err != nil {
				return "", fmt.Errorf("hashing the extension's files: %w", err)
			}
			fh := sha256.New()
			_, err = io.Copy(fh, f)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("hashing the extension's files: %w", err)
			}
			fmt.Fprintf(h, "%x\n", fh.Sum(nil))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
