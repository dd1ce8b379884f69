package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/agentplugin"
	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Bounds of the files gemkit reads from an extension's folder for itself:
// far above any real one, so that a FIFO-sized or endless file cannot
// make gemkit read without end.
const (
	maxManifestBytes = 4 << 20
	maxSmallFile     = 1 << 20
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
	// files, when set, is where the extension's files are now, Dir
	// being where they will be: the staging copy an install or update
	// asks consent for (atFinalPath). Root reads there.
	files string
	// Problems are the validation problems, each with its Effect; Load
	// returns a *ValidationError holding those that stop something
	// when there is any.
	Problems []Problem
	// Plugin, for a folder with an Agent Plugins plugin.json and no
	// gemini-extension.json, is the plugin read (plugin.go); Raw is
	// then its plugin.json and mcp.json (agentplugin.Plugin.Raw).
	Plugin *agentplugin.Plugin
}

// ManifestPath is the path of the extension's gemini-extension.json.
func (e *Extension) ManifestPath() string { return filepath.Join(e.Dir, e.manifestFile()) }

// Path returns the absolute path of rel, a path the manifest gives relative
// to the extension folder (or absolute inside it, via ${extensionPath}).
func (e *Extension) Path(rel string) string {
	if filepath.IsAbs(rel) {
		return filepath.Clean(rel)
	}
	return filepath.Join(e.Dir, filepath.FromSlash(rel))
}

// Root opens the extension's folder as an fsutil.Root: everything gemkit
// reads there itself (the manifest, settings, docs, skills, hooks, the
// files consent binds to) is read through one, so that a link the
// extension ships cannot lead gemkit's reads elsewhere. For an extension
// about to be installed or updated, it is the staging copy the person is
// asked about, not the folder it will have. The caller closes it.
func (e *Extension) Root() (*fsutil.Root, error) {
	if e.files != "" {
		return fsutil.OpenRoot(e.files)
	}
	return fsutil.OpenRoot(e.Dir)
}

// RelName returns p, a path the manifest gives (relative, or absolute inside
// the folder via ${extensionPath}), as a name in the extension's Root; a
// path outside the folder is refused with fsutil.ErrOutside.
func (e *Extension) RelName(p string) (string, error) {
	if filepath.IsAbs(p) {
		return fsutil.NameIn(e.Dir, p)
	}
	return filepath.Clean(filepath.FromSlash(p)), nil
}

// Unexpanded parses the manifest as written, without substituting
// variables; it is what two copies of one version in different folders
// have in common.
func (e *Extension) Unexpanded() *Manifest {
	if e.IsPlugin() {
		// Its placeholders are expanded only at a server's launch.
		return e.Manifest
	}
	m, _, err := ParseManifest(e.Raw)
	if err != nil {
		return e.Manifest
	}
	return m
}

// resolveDir returns the real path of dir. With realParent known, a
// folder that is not a symlink needs one lstat instead of one per path
// element, and none when the caller has just read dir's entry in
// realParent as a folder (folder): the store's List reads every entry's
// type with the listing of the extensions folder.
func resolveDir(dir, realParent string, folder bool) (string, error) {
	if realParent != "" {
		if folder {
			return filepath.Join(realParent, filepath.Base(dir)), nil
		}
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
// (commands/git/commit.toml is /git:commit). Links are not followed.
func (e *Extension) CustomCommands() []string {
	if e.IsPlugin() {
		return nil
	}
	root, err := e.Root()
	if err != nil {
		return nil
	}
	defer root.Close()
	var out []string
	root.Walk("commands", func(_ *fsutil.Root, p string, d fs.DirEntry) error {
		if d.IsDir() || filepath.Ext(p) != ".toml" {
			return nil
		}
		out = append(out, "/"+strings.ReplaceAll(strings.TrimSuffix(p, ".toml"), "/", ":"))
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
	root, err := openExtensionDir(dir, opts.realParent, false)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return loadIn(root, dir, opts)
}

// openExtensionDir opens the extension folder dir as a Root named by its
// real path (symlinks resolved), which is ${extensionPath}; realParent
// is as in LoadOptions, folder as in resolveDir.
func openExtensionDir(dir, realParent string, folder bool) (*fsutil.Root, error) {
	real, err := resolveDir(dir, realParent, folder)
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
	if isDir, err := dirCheck(real, realParent != ""); err != nil {
		return nil, fmt.Errorf("extension folder %s: %w", dir, err)
	} else if !isDir {
		return nil, fmt.Errorf("%s is not a folder; give the folder that holds %s", dir, ManifestFile)
	}
	root, err := fsutil.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("extension folder %s: %w", dir, err)
	}
	return root, nil
}

// loadIn is LoadWith of the extension folder open as root (named by its
// real path); dir is the folder as the caller named it, for messages.
func loadIn(root *fsutil.Root, dir string, opts LoadOptions) (*Extension, error) {
	real := root.Dir()
	manifestPath := filepath.Join(real, ManifestFile)
	raw, err := root.ReadFile(ManifestFile, maxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) && agentplugin.Has(root) {
		shown := filepath.Join(real, agentplugin.ManifestFile)
		if opts.shownManifest != "" {
			shown = strings.Replace(opts.shownManifest, ManifestFile, agentplugin.ManifestFile, 1)
		}
		return loadPlugin(root, shown)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s (nor an Agent Plugins %s); an extension folder must hold one", dir, ManifestFile, agentplugin.ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read the manifest: %w", err)
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
	m, probs, unknown, read, err := parseManifest(expanded, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	refused, unreadable := geminiRefusals(read)
	if unreadable != "" {
		return nil, fmt.Errorf("%s: the manifest: %w", shown, &agentread.Unreadable{Why: unreadable})
	}
	probs = append(appendUncovered(probs, validateIn(root, m)), unknown...)
	// What Gemini CLI refuses is said once, in its words: a name of
	// the wrong type is not "missing" again.
	probs = withEffects(appendUncovered(refused, probs))
	sortProblems(probs)
	ext := &Extension{Dir: real, Manifest: m, Raw: raw, Problems: probs}
	for _, name := range m.ContextFiles() {
		if rel, err := ext.RelName(name); err == nil {
			if fi, err := root.Stat(rel); err == nil && fi.Mode().IsRegular() {
				ext.ContextFiles = append(ext.ContextFiles, root.Path(rel))
			}
		}
	}
	if stops := stopping(probs); len(stops) > 0 {
		return ext, &ValidationError{File: shown, Problems: stops}
	}
	return ext, nil
}

// stopping are the problems of probs that stop something: all but the
// warnings.
func stopping(probs []Problem) []Problem {
	var out []Problem
	for _, p := range probs {
		if p.Effect != EffectWarning {
			out = append(out, p)
		}
	}
	return out
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

// lstatIn is Lstat of name in the folder dir, through a Root of it.
func lstatIn(dir, name string) (fs.FileInfo, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Lstat(name)
}

// readIn reads the regular file name in the folder dir, through a Root of
// it, at most limit bytes.
func readIn(dir, name string, limit int64) ([]byte, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(name, limit)
}
