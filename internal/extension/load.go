package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// resolveDir returns the real path of dir. With realParent known, a
// folder that is not a symlink needs one lstat instead of one per path
// element.
func resolveDir(dir, realParent string) (string, error) {
	if realParent != "" {
		if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return filepath.Join(realParent, filepath.Base(dir)), nil
		}
	}
	return filepath.EvalSymlinks(dir)
}

// dirCheck reports whether real is a folder. The store has just seen its
// entries as folders, so it skips the check when trusted.
func dirCheck(real string, trusted bool) (bool, error) {
	if trusted {
		return true, nil
	}
	fi, err := os.Stat(real)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// CustomCommands lists the slash commands the extension adds to Gemini
// CLI: every .toml file under commands/, named as Gemini CLI names them
// (commands/git/commit.toml is /git:commit).
func (e *Extension) CustomCommands() []string {
	root := filepath.Join(e.Dir, "commands")
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".toml" {
			return nil
		}
		rel, _ := filepath.Rel(root, strings.TrimSuffix(p, ".toml"))
		out = append(out, "/"+strings.ReplaceAll(filepath.ToSlash(rel), "/", ":"))
		return nil
	})
	return out
}

// LoadOptions tune Load.
type LoadOptions struct {
	// WorkspacePath is ${workspacePath}; empty means the current
	// directory.
	WorkspacePath string

	// realParent, when set, is the real path of the folder dir is in, so
	// only dir itself needs resolving (the store knows it for all its
	// entries).
	realParent string

	// shownManifest, when set, is how errors name the manifest: install
	// and update load a staging copy, but the person needs to hear about
	// the file in the source they gave.
	shownManifest string
}

// Load reads, substitutes and validates the extension in dir. See LoadWith.
func Load(dir string) (*Extension, error) { return LoadWith(dir, LoadOptions{}) }

// LoadWith reads the extension in dir. When the manifest is readable but
// breaks a rule, LoadWith returns the extension (for callers that only
// show information) together with a *ValidationError listing every
// problem; when it cannot be read at all the extension is nil.
func LoadWith(dir string, opts LoadOptions) (*Extension, error) {
	real, err := resolveDir(dir, opts.realParent)
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
	if isDir, err := dirCheck(real, opts.realParent != ""); err != nil {
		return nil, fmt.Errorf("extension folder %s: %w", dir, err)
	} else if !isDir {
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
	shown := manifestPath
	if opts.shownManifest != "" {
		shown = opts.shownManifest
	}
	vars := Variables{ExtensionPath: real, WorkspacePath: ws}
	expanded, err := vars.ExpandJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, describeSyntaxError(raw, err))
	}
	m, probs, err := ParseManifest(expanded)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	probs = appendUncovered(probs, Validate(real, m))
	probs = append(probs, unknownKeys(expanded)...)
	sortProblems(probs)
	ext := &Extension{Dir: real, Manifest: m, Raw: raw, Problems: probs}
	for _, name := range m.ContextFiles() {
		p := ext.Path(name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			ext.ContextFiles = append(ext.ContextFiles, p)
		}
	}
	if len(probs) > 0 {
		return ext, &ValidationError{File: shown, Problems: probs}
	}
	return ext, nil
}

// appendUncovered adds the rule problems to the type problems, leaving out
// those at or under a path whose value already has the wrong type: after
// "name: is a JSON number, not a string", "name: is missing" only
// repeats it.
func appendUncovered(typeProbs, ruleProbs []Problem) []Problem {
	out := typeProbs
	for _, p := range ruleProbs {
		covered := false
		for _, tp := range typeProbs {
			if p.Path == tp.Path || strings.HasPrefix(p.Path, tp.Path+".") || strings.HasPrefix(p.Path, tp.Path+"[") {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}
