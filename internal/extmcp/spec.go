// Package extmcp runs the enabled extensions' own stdio MCP servers (the
// manifest's mcpServers entries with a command) inside gemkit's sandbox,
// for `gemkit mcp` to serve: each server is started through
// sandbox.Launcher.StartServer at its first use, kept while it is used,
// stopped when idle and started again once if it dies. Its tools are
// listed and called through internal/mcpclient.
package extmcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
)

// Spec is one stdio mcpServers entry of an enabled extension, as gemkit
// starts it.
type Spec struct {
	// Extension and Server are the extension's and the entry's names.
	Extension, Server string
	// Dir is the extension's folder.
	Dir string
	// Command and Args are the entry's command and arguments, with the
	// manifest's variables (${extensionPath}, ...) already substituted.
	Command string
	Args    []string
	// Env are the entry's env values as written; Settings are the values
	// of the extension's declared settings, by variable. The server's
	// environment is both (BuildProfile), a $NAME or ${NAME} in an env
	// value taking the value of a declared setting, or of HOME, the
	// server's data folder: never the person's environment.
	Env      map[string]string
	Settings map[string]string
	// Timeout bounds each call: the entry's timeout (milliseconds in the
	// manifest), 0 when it has none.
	Timeout time.Duration
	// Widening is what the person allowed the extension's servers beyond
	// the default profile (gemkit extensions sandbox NAME --allow-host,
	// --allow-write), agreed to with the extension's consent.
	Widening extension.Widening
	// Allowed, when set, is asked before each start of the server: an
	// error (in words: the person has not agreed to the extension as it
	// is now) keeps it from starting. It is asked then, not when the
	// specs are made, since it may hash the extension's folder, which
	// would hold up gemkit mcp's first answer.
	Allowed func() error `json:"-"`
}

// Key identifies the spec's server in a Manager.
func (s Spec) Key() string { return s.Extension + "\x00" + s.Server }

// same reports whether a and b start the same process.
func (s Spec) same(o Spec) bool {
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(o)
	return string(a) == string(b)
}

// Skipped is an mcpServers entry gemkit does not serve, with why.
type Skipped struct {
	Extension, Server, Reason string
}

// entry is the part of Gemini CLI's MCPServerConfig a stdio server uses.
type entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	// cwd is not followed: a server's working folder is the workspace.
	URL     string   `json:"url"`
	HTTPURL string   `json:"httpUrl"`
	TCP     string   `json:"tcp"`
	Timeout *float64 `json:"timeout"`
}

// Choose says whether the servers of the extension e are served, with
// what widening of the default profile and what to ask before each start
// (Spec.Allowed, nil: nothing); a reason (why) leaves them all out.
// gemkit mcp serves the extensions the person switched to gemkit, with
// their consent (internal/cli).
type Choose func(e *disclosure.Extension) (w extension.Widening, allowed func() error, why string)

// Specs are the stdio servers of the set's extensions that choose lets
// through (nil: all, under the default profile), sorted by extension and
// server, and the entries left out with why: remote servers, an entry
// that starts gemkit itself (an extension serving its own tools with
// `gemkit mcp --extension`), and those choose refuses.
func Specs(set *disclosure.Set, choose Choose) ([]Spec, []Skipped) {
	var out []Spec
	var skipped []Skipped
	for _, e := range set.Extensions {
		m := e.Ext.Manifest
		names := make([]string, 0, len(m.MCPServers))
		for n := range m.MCPServers {
			names = append(names, n)
		}
		sort.Strings(names)
		var w extension.Widening
		var allowed func() error
		var refused string
		if choose != nil && len(names) > 0 {
			w, allowed, refused = choose(e)
		}
		for _, n := range names {
			if refused != "" {
				// Not read at all: most extensions are not switched, and
				// this is on the way to gemkit mcp's first answer.
				skipped = append(skipped, Skipped{m.Name, n, refused})
				continue
			}
			sp, why := specOf(e, n, m.MCPServers[n])
			sp.Widening, sp.Allowed = w, allowed
			if why != "" {
				skipped = append(skipped, Skipped{m.Name, n, why})
				continue
			}
			out = append(out, sp)
		}
	}
	return out, skipped
}

func specOf(e *disclosure.Extension, name string, raw json.RawMessage) (Spec, string) {
	m := e.Ext.Manifest
	var ent entry
	if err := json.Unmarshal(raw, &ent); err != nil {
		return Spec{}, fmt.Sprintf("its definition cannot be read: %v", err)
	}
	switch {
	case ent.Command == "" && (ent.URL != "" || ent.HTTPURL != "" || ent.TCP != ""):
		return Spec{}, "a remote server; gemkit serves stdio servers only"
	case ent.Command == "":
		return Spec{}, "it has no command"
	case filepath.Base(ent.Command) == "gemkit":
		return Spec{}, "it is gemkit itself"
	}
	sp := Spec{Extension: m.Name, Server: name, Dir: e.Ext.Dir, Command: ent.Command, Args: ent.Args, Env: ent.Env, Settings: map[string]string{}}
	if ent.Timeout != nil && *ent.Timeout > 0 {
		sp.Timeout = time.Duration(*ent.Timeout * float64(time.Millisecond))
	}
	for _, s := range m.Settings {
		if v, ok := e.Settings[s.EnvVar]; ok {
			sp.Settings[s.EnvVar] = v
		}
	}
	return sp, ""
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expand substitutes $NAME and ${NAME} in v with the values of vars; a
// name not in vars becomes "" (Gemini CLI would take it from the
// person's environment, which a sandboxed server does not get).
func expand(v string, vars map[string]string) string {
	if !strings.Contains(v, "$") {
		return v
	}
	return varRef.ReplaceAllStringFunc(v, func(ref string) string {
		n := strings.Trim(ref, "${}")
		return vars[n]
	})
}

// DataRoot is the folder of the servers' private data folders,
// ~/.local/share/gemkit/extension-data: inside ~/.local/share/gemkit,
// which is closed to every sandboxed process (permission.ClosedPaths)
// but its own extension's servers. It does not follow XDG_DATA_HOME,
// which the closed folders do not follow either.
func DataRoot(env map[string]string) (string, error) {
	home := env["HOME"]
	if !filepath.IsAbs(home) {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder for the extensions' data folders: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "gemkit", "extension-data"), nil
}

// Printable is s fit to print in words a person reads.
func Printable(s string) string { return extension.Printable(s) }
