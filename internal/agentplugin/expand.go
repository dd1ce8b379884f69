package agentplugin

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// The two placeholders of §9.2, the only ones expanded.
const (
	PlaceholderRoot = "${PLUGIN_ROOT}"
	PlaceholderData = "${PLUGIN_DATA}"
)

// Expand replaces every exact ${PLUGIN_ROOT} and ${PLUGIN_DATA} in s
// with root and data, in one pass: text a replacement brings in is not
// scanned again, and any other ${…} or $NAME stays as written (§9.2).
func Expand(s, root, data string) string {
	if !strings.Contains(s, "${PLUGIN_") {
		return s
	}
	return strings.NewReplacer(PlaceholderRoot, root, PlaceholderData, data).Replace(s)
}

// Launch is a stdio server as it is started: its args, env and cwd
// expanded (§9.2), its command resolved (§7.2.1), and the environment it
// gets on top of the client's base one, the plugin's two variables set
// last (§9.1).
type Launch struct {
	// Command is the program: absolute in the plugin root for a "./"
	// command, else the bare name for the client's own search.
	Command string
	Args    []string
	// Env is the server's env, expanded, with PLUGIN_ROOT and
	// PLUGIN_DATA set over any entry of those names.
	Env map[string]string
	// Dir is the working folder, resolved and checked (ResolveCwd).
	Dir string
}

// Program is the server's program for the plugin whose root is root:
// a "./" command's file there, else the bare name, for the client's own
// search (§7.2.1).
func (s Server) Program(root string) string {
	if rel, ok := strings.CutPrefix(s.Command, "./"); ok {
		return filepath.Join(root, filepath.FromSlash(rel))
	}
	return s.Command
}

// Launch is s as started for the plugin whose real root is root and
// whose data folder (made, writable) is data; files, when not "", is
// where the root's files are now (gemkit's copy as agreed to, shown to
// the server at root), in which its cwd is resolved. An error says why
// it cannot start (its cwd leads out, or does not exist).
func (s Server) Launch(root, data, files string) (Launch, error) {
	l := Launch{Command: s.Program(root), Env: map[string]string{}}
	for _, a := range s.Args {
		l.Args = append(l.Args, Expand(a, root, data))
	}
	for k, v := range s.Env {
		l.Env[k] = Expand(v, root, data)
	}
	l.Env["PLUGIN_ROOT"], l.Env["PLUGIN_DATA"] = root, data
	dir, err := ResolveCwd(s.Cwd, root, data, files)
	if err != nil {
		return Launch{}, err
	}
	l.Dir = dir
	return l, nil
}

// ResolveCwd is the working folder of a server whose cwd is cwd (""
// for none: the plugin root) for the plugin whose real root is root and
// data folder data (§7.2.1): placeholders expanded, then its links
// resolved; it must stay within the real root (./… and
// ${PLUGIN_ROOT}…), or within the real data folder (${PLUGIN_DATA}…).
// files is as in Launch: a folder in the root is resolved there, and
// named as the server sees it, under root.
func ResolveCwd(cwd, root, data, files string) (string, error) {
	if files == "" {
		files = root
	}
	within, shown := files, root
	switch {
	case cwd == "":
		return root, nil
	case strings.HasPrefix(cwd, "./"):
		cwd = PlaceholderRoot + "/" + strings.TrimPrefix(cwd, "./")
	case strings.HasPrefix(cwd, PlaceholderData):
		within, shown = data, data
	case !strings.HasPrefix(cwd, PlaceholderRoot):
		return "", fmt.Errorf("its cwd %q is none of the forms Agent Plugins 1.0.0 allows", cwd)
	}
	dir := filepath.Clean(Expand(cwd, files, data))
	realWithin, err := filepath.EvalSymlinks(within)
	if err != nil {
		return "", fmt.Errorf("its cwd's folder %s cannot be used: %w", within, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("its cwd %s cannot be used: %w", dir, errors.Unwrap(err))
	}
	rel, ok := fsutil.Rel(realWithin, real)
	if !ok {
		return "", fmt.Errorf("its cwd %s leads out of %s (to %s), which Agent Plugins 1.0.0 forbids (§7.2.1)", dir, within, real)
	}
	return filepath.Join(shown, rel), nil
}

// otherPlaceholder finds ${NAME} that is neither of the two.
var otherPlaceholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{[^}]*\}`) })

// literalNotes notes the placeholder-like text of s that stays as
// written: a person porting from an agent that expands more would
// otherwise wonder (§9.2, §7.2.1).
func (p *Plugin) literalNotes(name string, s Server) {
	seen := map[string]bool{}
	var all []string
	if s.Stdio() {
		all = append(append(all, s.Command, s.Cwd), s.Args...)
		for _, v := range s.Env {
			all = append(all, v)
		}
	} else {
		all = append(all, s.URL)
		for k, v := range s.Headers {
			all = append(all, k, v)
		}
	}
	for _, v := range all {
		for _, m := range otherPlaceholder().FindAllString(v, -1) {
			if s.Stdio() && s.Command != v && (m == PlaceholderRoot || m == PlaceholderData) {
				continue
			}
			seen[m] = true
		}
	}
	if len(seen) == 0 {
		return
	}
	list := sortedKeys(seen)
	sort.Strings(list)
	where := "Agent Plugins 1.0.0 expands only ${PLUGIN_ROOT} and ${PLUGIN_DATA}, in args, env and cwd (§9.2)"
	p.note(MCPFile, "mcpServers."+quoteKey(name), strings.Join(list, ", ")+" passed as written: "+where, "none if it is meant as written; a path in the plugin is ${PLUGIN_ROOT}/…, its data ${PLUGIN_DATA}/…")
}
