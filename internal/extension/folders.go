package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ExtensionFolders lists the extensions folder, every entry in it and the
// source folder of every linked extension: code that tools of other
// extensions must never change, since it runs later with its own
// extension's permissions. The sandbox keeps them read-only to every
// tool. It reads only the folder and the install metadata (no manifest),
// as it runs before every tool call.
func (s *Store) ExtensionFolders() ([]string, error) {
	out, err := foldersIn(s.Dir())
	if err != nil {
		return nil, err
	}
	plugins, err := foldersIn(s.PluginsDir())
	return append(out, plugins...), err
}

// foldersIn is ExtensionFolders of the folder parent (the extensions
// folder, or PluginsDir).
func foldersIn(parent string) ([]string, error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the extensions folder: %w", err)
	}
	out := []string{parent}
	for _, e := range entries {
		if isStagingName(e.Name()) {
			continue
		}
		entry := filepath.Join(parent, e.Name())
		out = append(out, entry)
		if md, err := readMetadata(entry); err == nil && md != nil && md.Type == SourceLink && filepath.IsAbs(md.Source) {
			out = append(out, md.Source)
		}
	}
	return out, nil
}

// EnvFolders lists the extension folders (ExtensionFolders) of the store
// Gemini CLI uses with the environment env: $GEMINI_CLI_HOME's, else
// HOME's.
func EnvFolders(env map[string]string) ([]string, error) {
	home := env[HomeEnv]
	if home == "" {
		home = env["HOME"]
	}
	if !filepath.IsAbs(home) {
		h, err := DefaultHome()
		if err != nil {
			return nil, err
		}
		home = h
	}
	return OpenStore(home).ExtensionFolders()
}
