package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Extension is an extension folder read from disk: its manifest with the
// variables substituted, checked against the rules of Validate.
type Extension struct {
	// Dir is the real path of the extension's folder (symlinks resolved);
	// ${extensionPath} is this path.
	Dir string
	// Manifest is the manifest with ${extensionPath}, ${workspacePath}
	// and ${/} substituted, as Gemini CLI sees it.
	Manifest *Manifest
	// Raw is the manifest file exactly as it is on disk.
	Raw []byte
	// ContextFiles are the absolute paths of the context files that exist
	// (Gemini CLI skips declared ones that do not).
	ContextFiles []string
	// Problems are the validation problems; Load returns a
	// *ValidationError holding them when there is any.
	Problems []Problem
}

// ManifestPath is the path of the extension's gemini-extension.json.
func (e *Extension) ManifestPath() string { return filepath.Join(e.Dir, ManifestFile) }

// Path returns the absolute path of rel, a path the manifest gives relative
// to the extension folder (or absolute inside it, via ${extensionPath}).
func (e *Extension) Path(rel string) string {
	if filepath.IsAbs(rel) {
		return filepath.Clean(rel)
	}
	return filepath.Join(e.Dir, filepath.FromSlash(rel))
}

// Unexpanded parses the manifest as written, without substituting
// variables; it is what two copies of one version in different folders
// have in common.
func (e *Extension) Unexpanded() *Manifest {
	m, _, err := ParseManifest(e.Raw)
	if err != nil {
		return e.Manifest
	}
	return m
}

// LoadOptions tune Load.
type LoadOptions struct {
	// WorkspacePath is ${workspacePath}; empty means the current
	// directory.
	WorkspacePath string
}

// Load reads, substitutes and validates the extension in dir. See LoadWith.
func Load(dir string) (*Extension, error) { return LoadWith(dir, LoadOptions{}) }

// LoadWith reads the extension in dir. When the manifest is readable but
// breaks a rule, LoadWith returns the extension (for callers that only
// show information) together with a *ValidationError listing every
// problem; when it cannot be read at all the extension is nil.
func LoadWith(dir string, opts LoadOptions) (*Extension, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("extension folder %s does not exist", dir)
		}
		return nil, fmt.Errorf("extension folder %s: %w", dir, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("extension folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder; give the folder that holds %s", dir, ManifestFile)
	}
	manifestPath := filepath.Join(real, ManifestFile)
	raw, err := os.ReadFile(manifestPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s; an extension folder must hold one", dir, ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	ws := opts.WorkspacePath
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("find the workspace: %w", err)
		}
	}
	vars := Variables{ExtensionPath: real, WorkspacePath: ws}
	expanded, err := vars.ExpandJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, describeSyntaxError(raw, err))
	}
	m, probs, err := ParseManifest(expanded)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, describeSyntaxError(raw, err))
	}
	probs = append(probs, Validate(real, m)...)
	sortProblems(probs)
	ext := &Extension{Dir: real, Manifest: m, Raw: raw, Problems: probs}
	for _, name := range m.ContextFiles() {
		p := ext.Path(name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			ext.ContextFiles = append(ext.ContextFiles, p)
		}
	}
	if len(probs) > 0 {
		return ext, &ValidationError{File: manifestPath, Problems: probs}
	}
	return ext, nil
}
