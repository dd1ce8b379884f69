package toolrun

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// Installed lists the installed extensions: their folders (and the
// sources of the linked ones) stay read-only to every tool, and their
// write scopes say which folders no program is started from.
// *extension.Store is one.
type Installed interface {
	// ExtensionFolders lists the extensions folder, each extension's
	// folder and each linked extension's source.
	ExtensionFolders() ([]string, error)
	// List loads every installed extension.
	List() ([]*extension.Installed, error)
}

// readOnly lists the folders every tool must find read-only.
func (r *Runner) readOnly() ([]string, error) {
	out := append([]string(nil), r.ReadOnly...)
	if r.Installed == nil {
		return out, nil
	}
	dirs, err := r.Installed.ExtensionFolders()
	if err != nil {
		return nil, fmt.Errorf("listing the installed extensions, which tools must not change: %w", err)
	}
	return append(out, dirs...), nil
}

// resolve resolves the tool's whole policy on this machine, once
// (permission.Resolve): the closed folders (gemkit's and Gemini CLI's
// configuration, the files that hold the tokens of the servers gemkit
// serves or runs, wherever their environment put them, and r.Protected),
// the protected paths in the write scope (node_modules above every
// extension's folder among them), and the folders no program is started
// from: the workspace, and the home folder when a tool of this extension
// or of any installed one may write it.
func (r *Runner) resolve(p permission.Policy, env map[string]string, ws, home, extDir string, folders []string) permission.Resolved {
	getenv := envmap.Map(env).Get
	in := permission.ClosedOf(getenv)
	in.Extra = r.Protected
	return permission.Resolve(p, permission.Where{Workspace: ws, Home: home, Closed: in, OwnFolder: extDir,
		OtherWrites: r.others.writes(r.Installed, folders), ExtensionFolders: append([]string{extDir}, folders...),
		Locator: &r.servers, Getenv: getenv})
}

// otherWrites keeps the write scopes of the installed extensions between
// runs: loading every manifest costs milliseconds per run with hundreds of
// extensions, so they are loaded again only when a manifest among the
// extension folders changed (its size or time), was added or removed.
type otherWrites struct {
	mu     sync.Mutex
	key    string
	scopes []permission.Access
}

// writes returns the write scopes of the installed extensions (nil when
// there are none to list); folders are the extension folders, whose
// manifests' sizes and times say whether the last answer holds.
func (o *otherWrites) writes(installed Installed, folders []string) []permission.Access {
	if installed == nil {
		return nil
	}
	var key strings.Builder
	for _, f := range folders {
		if fi, err := fsutil.StatIn(f, extension.ManifestFile); err == nil {
			fmt.Fprintf(&key, "%s\x00%d\x00%d\x00", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.scopes != nil && o.key == key.String() {
		return o.scopes
	}
	list, err := installed.List()
	if err != nil {
		return nil
	}
	scopes := []permission.Access{}
	for _, in := range list {
		if m := in.Manifest(); m != nil {
			scopes = append(scopes, m.EffectivePermissions().Filesystem.Write)
		}
	}
	o.key, o.scopes = key.String(), scopes
	return scopes
}
