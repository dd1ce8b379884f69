package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// Names of the files Gemini CLI keeps in ~/.gemini/extensions, which gemkit
// reads and writes in the same format so that both tools see the same
// extensions.
const (
	// InstallMetadataFile sits in each installed extension's folder and
	// says where it came from.
	InstallMetadataFile = ".gemini-extension-install.json"
	// EnablementFile sits in the extensions folder and holds the enable
	// and disable rules of every extension.
	EnablementFile = "extension-enablement.json"
	// HomeEnv overrides the home folder (the one that holds .gemini), as
	// it does for Gemini CLI.
	HomeEnv = "GEMINI_CLI_HOME"
)

// Source types of InstallMetadata.Type, as Gemini CLI names them.
const (
	SourceGit           = "git"
	SourceLocal         = "local"
	SourceLink          = "link"
	SourceGitHubRelease = "github-release"
)

// InstallMetadata is .gemini-extension-install.json. Fields gemkit does
// not name are kept in Extra and written back.
type InstallMetadata struct {
	// Source is the git URL, or the absolute path of a local or linked
	// folder.
	Source string `json:"source"`
	// Type is one of SourceGit, SourceLocal, SourceLink, SourceGitHubRelease.
	Type            string `json:"type"`
	Ref             string `json:"ref,omitempty"`
	ReleaseTag      string `json:"releaseTag,omitempty"`
	AutoUpdate      bool   `json:"autoUpdate,omitempty"`
	AllowPreRelease bool   `json:"allowPreRelease,omitempty"`
	// Subdir is the folder inside a git repository that holds the
	// manifest (install --path). Gemini CLI does not know it.
	Subdir string `json:"gemkitSubdir,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

var metadataFields = map[string]bool{"source": true, "type": true, "ref": true, "releaseTag": true,
	"autoUpdate": true, "allowPreRelease": true, "gemkitSubdir": true}

// UnmarshalJSON keeps unknown fields in Extra.
func (im *InstallMetadata) UnmarshalJSON(data []byte) error {
	type plain InstallMetadata
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	eachField(data, func(k string, v json.RawMessage) {
		if !metadataFields[k] {
			if p.Extra == nil {
				p.Extra = map[string]json.RawMessage{}
			}
			p.Extra[k] = append(json.RawMessage(nil), v...)
		}
	})
	*im = InstallMetadata(p)
	return nil
}

// MarshalJSON writes the named fields and then Extra.
func (im InstallMetadata) MarshalJSON() ([]byte, error) {
	type plain InstallMetadata
	out, err := json.Marshal(plain(im))
	if err != nil || len(im.Extra) == 0 {
		return out, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, err
	}
	for k, v := range im.Extra {
		if !metadataFields[k] {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// Store is the set of extensions installed under one home folder:
// <home>/.gemini/extensions/<name>/, shared with Gemini CLI. A Store holds
// no open files; every method reads the disk afresh.
type Store struct {
	home      string
	workspace string
	// writable names the folders some tool, server or other program
	// may write, for Content.Bindable (WithWritable); nil: none known.
	writable func() []string
}

// DefaultHome is the home folder Gemini CLI uses: $GEMINI_CLI_HOME, or the
// user's home directory.
func DefaultHome() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		return filepath.Abs(h)
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder (set %s): %w", HomeEnv, err)
	}
	return h, nil
}

// OpenStore returns the store under home, the folder that holds .gemini
// (see DefaultHome). The workspace is the current directory until
// WithWorkspace says otherwise. Nothing is created until something is
// installed.
func OpenStore(home string) *Store {
	abs, err := filepath.Abs(home)
	if err == nil {
		home = abs
	}
	ws, _ := os.Getwd()
	return &Store{home: home, workspace: ws}
}

// WithWorkspace returns a copy of s whose workspace is ws: the folder
// ${workspacePath} stands for and the workspace enablement scope applies
// to.
func (s *Store) WithWorkspace(ws string) *Store {
	c := *s
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	c.workspace = ws
	return &c
}

// WithWritable returns a copy of s whose consent checks (Consent,
// CheckFiles, and those of Install, Link and Update) take the folders
// writable returns, asked at each check, as those a program other than
// the person may write: an extension file with another name, or a link
// into one of them, is code consent cannot bind (Content.Bindable).
func (s *Store) WithWritable(writable func() []string) *Store {
	c := *s
	c.writable = writable
	return &c
}

// Home is the folder that holds .gemini.
func (s *Store) Home() string { return s.home }

// Workspace is the workspace folder of this store view.
func (s *Store) Workspace() string { return s.workspace }

// Dir is the extensions folder, <home>/.gemini/extensions.
func (s *Store) Dir() string { return filepath.Join(s.home, ide.AgentGemini.HomeDir, "extensions") }

// stateDir is where gemkit keeps what Gemini CLI has no file for (consent
// records, the lock): <home>/.gemini/gemkit.
func (s *Store) stateDir() string { return gemkitdir.InGeminiHome(s.home) }

// Installed is one entry of the extensions folder.
type Installed struct {
	// Name is the entry's folder name, which is the extension's name for
	// everything installed by gemkit or Gemini CLI.
	Name string
	// Entry is the entry's path in the extensions folder. For a linked
	// extension it holds only the install metadata.
	Entry string
	// Metadata is the install metadata; nil when the file is missing
	// (an extension copied in by hand).
	Metadata *InstallMetadata
	// Extension is the loaded extension; nil when it could not be read.
	// Extension.Dir is the linked source folder for a linked extension.
	Extension *Extension
	// Err is why the extension could not be loaded or is invalid (a
	// *ValidationError when only rules are broken).
	Err error
}

// Manifest returns the manifest, or nil when the extension is unreadable.
func (in *Installed) Manifest() *Manifest {
	if in.Extension == nil {
		return nil
	}
	return in.Extension.Manifest
}

// ErrNotInstalled is returned (wrapped) by Get for an unknown name.
var ErrNotInstalled = errors.New("extension is not installed")

// List returns every installed extension sorted by name. Entries that
// cannot be read are listed with Err set rather than dropped, so that a
// broken extension is visible; files in the extensions folder (such as
// the enablement file) and gemkit's staging folders are skipped.
func (s *Store) List() ([]*Installed, error) {
	dirs, err := s.entriesIn(s.Dir(), "the extensions folder")
	if err != nil {
		return nil, err
	}
	plugins, err := s.entriesIn(s.PluginsDir(), "gemkit's Agent Plugins folder")
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, plugins...)
	slices.SortStableFunc(dirs, func(a, b listed) int { return strings.Compare(a.Name(), b.Name()) })
	// Loading is file reads and JSON: spread it over the CPUs. Each
	// worker takes the next index from a counter, which costs no
	// goroutine wake-ups, unlike handing indexes over a channel.
	out := make([]*Installed, len(dirs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(dirs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(dirs); i = int(next.Add(1) - 1) {
				out[i] = s.loadEntryIn(dirs[i].parent, dirs[i].Name(), dirs[i].real, dirs[i].IsDir())
			}
		})
	}
	wg.Wait()
	return out, nil
}

// Get returns the installed extension called name. Like Gemini CLI it
// matches the name case-insensitively when no folder has the exact name.
func (s *Store) Get(name string) (*Installed, error) {
	if !isFolderName(name) {
		return nil, fmt.Errorf("%q is not an extension name", name)
	}
	for _, parent := range []string{s.Dir(), s.PluginsDir()} {
		if fi, err := os.Stat(filepath.Join(parent, name)); err == nil && fi.IsDir() && !isStagingName(name) {
			return s.loadEntry(parent, name), nil
		}
	}
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	for _, in := range all {
		if strings.EqualFold(in.Name, name) {
			return in, nil
		}
		if m := in.Manifest(); m != nil && strings.EqualFold(m.Name, name) {
			return in, nil
		}
	}
	return nil, fmt.Errorf("%q: %w (see `gemkit extensions list`)", name, ErrNotInstalled)
}

// loadEntry reads one entry of the folder parent: the extensions
// folder, or PluginsDir.
func (s *Store) loadEntry(parent, name string) *Installed {
	realDir, err := filepath.EvalSymlinks(parent)
	if err != nil {
		realDir = ""
	}
	return s.loadEntryIn(parent, name, realDir, false)
}

// loadEntryIn is loadEntry with the real path of the extensions folder
// known, and whether the entry is a folder and not a link when the
// caller has read so (folder, as in resolveDir). The entry is opened
// once, as a Root named by its real path: the install metadata and,
// unless the entry is a link's, the whole extension are read through it.
func (s *Store) loadEntryIn(parent, name, realDir string, folder bool) *Installed {
	in := &Installed{Name: name, Entry: filepath.Join(parent, name)}
	root, err := openExtensionDir(in.Entry, realDir, folder)
	if err != nil {
		in.Err = err
		return in
	}
	defer root.Close()
	md, err := readMetadataIn(root, in.Entry)
	if err != nil {
		in.Err = err
		return in
	}
	in.Metadata = md
	opts := LoadOptions{WorkspacePath: s.workspace}
	if md != nil && md.Type == SourceLink {
		in.Extension, in.Err = LoadWith(md.Source, opts)
		return in
	}
	in.Extension, in.Err = loadIn(root, in.Entry, opts)
	return in
}

// readMetadata reads the install metadata of the store's entry entry,
// through a Root of it: the entry of an installed extension is the
// extension's own folder, which may ship a link under that name.
func readMetadata(entry string) (*InstallMetadata, error) {
	root, err := fsutil.OpenRoot(entry)
	if err != nil {
		return nil, fmt.Errorf("read install metadata: %w", err)
	}
	defer root.Close()
	return readMetadataIn(root, entry)
}

// readMetadataIn is readMetadata of the entry open as root.
func readMetadataIn(root *fsutil.Root, entry string) (*InstallMetadata, error) {
	data, err := root.ReadFile(InstallMetadataFile, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read install metadata: %w", err)
	}
	// UnmarshalJSON itself, not json.Unmarshal, which would check the
	// bytes once before handing them to it and it checks them again.
	var md InstallMetadata
	if err := md.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(entry, InstallMetadataFile), err)
	}
	return &md, nil
}

// stagingPrefix starts the names of gemkit's temporary folders inside the
// extensions folder (installs in progress, folders being removed).
const stagingPrefix = ".gemkit-"

func isStagingName(name string) bool { return strings.HasPrefix(name, stagingPrefix) }

func relTo(base, p string) string {
	if r, ok := fsutil.Rel(base, p); ok {
		return r
	}
	return p
}

// isFolderName reports whether name can name a folder of its own in
// gemkit's folders of extensions (the store's, the agreed copies'):
// not empty, not . or .., and no separator or NUL in it.
func isFolderName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`+"\x00")
}
