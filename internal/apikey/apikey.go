// Package apikey keeps the Gemini API key `gemkit login` stores: one
// line in gemini-api-key beside gemkit's config file (gemkitdir.UserConfig:
// ~/.config/gemkit), the file 0600 in a folder 0700, written atomically.
// gemkit reads it where it reads GEMINI_API_KEY, when neither
// GEMINI_API_KEY nor GOOGLE_API_KEY is set: the environment always wins,
// so an editor's own key setting keeps working. The config file itself
// never holds a key.
package apikey

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// Dir is the folder of gemkit's config file, where the key is kept.
func Dir() (string, error) {
	d, err := gemkitdir.UserConfig()
	if err != nil {
		return "", fmt.Errorf("find the config folder: %w", err)
	}
	return d, nil
}

// UserGetenv is Getenv with the key of the person's config folder (Dir);
// where that folder cannot be found, getenv alone.
func UserGetenv(getenv func(string) string, onErr func(error)) func(string) string {
	dir, err := Dir()
	if err != nil {
		return getenv
	}
	return Getenv(getenv, dir, onErr)
}

// FileName is the key's file in the config folder.
const FileName = "gemini-api-key"

// maxKey bounds a key: Gemini API keys are 39 characters.
const maxKey = 512

// Path is the key's file in the config folder dir.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// Check says, in words, why key cannot be a Gemini API key: empty, too
// long, or holding spaces or control characters (a key pasted with a
// stray character would be sent as it is and refused far from here).
func Check(key string) error {
	switch {
	case key == "":
		return errors.New("no key given")
	case len(key) > maxKey:
		return fmt.Errorf("the key is longer than %d characters", maxKey)
	}
	for _, r := range key {
		if r <= ' ' || r >= 0x7f {
			return errors.New("the key holds a space, a control character or a character outside ASCII: copy it again from https://aistudio.google.com/apikey")
		}
	}
	return nil
}

// Save stores key in the config folder dir (made 0700 when missing),
// replacing any stored one, atomically, 0600.
func Save(dir, key string) error {
	if err := Check(key); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the config folder: %w", err)
	}
	if err := fsutil.WriteFileAtomic(Path(dir), []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	return nil
}

// Read is the key stored in dir: "" and no error when none is stored.
// A file that is not a key, or that others may read, is an error in
// words: gemkit does not send a key it did not store itself.
func Read(dir string) (string, error) {
	p := Path(dir)
	f, err := fsutil.OpenRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the stored key %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the stored key %s may be read by others (mode %04o): run `gemkit login` again, or chmod 600 it", p, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKey+2))
	if err != nil {
		return "", fmt.Errorf("read the stored key %s: %w", p, err)
	}
	key := strings.TrimRight(string(data), "\r\n")
	if err := Check(key); err != nil {
		return "", fmt.Errorf("the stored key %s is not a key (%v): run `gemkit login` again", p, err)
	}
	return key, nil
}

// Remove deletes the stored key; it reports whether there was one.
func Remove(dir string) (bool, error) {
	err := os.Remove(Path(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remove the stored key: %w", err)
	}
	return true, nil
}

// Getenv is getenv with GEMINI_API_KEY read from the key stored in dir
// when neither GEMINI_API_KEY nor GOOGLE_API_KEY is set. A stored key
// that cannot be read is reported once through onErr and not used.
func Getenv(getenv func(string) string, dir string, onErr func(error)) func(string) string {
	return func(name string) string {
		v := getenv(name)
		if name != "GEMINI_API_KEY" || v != "" || getenv("GOOGLE_API_KEY") != "" || dir == "" {
			return v
		}
		key, err := Read(dir)
		if err != nil && onErr != nil {
			onErr(err)
		}
		return key
	}
}
