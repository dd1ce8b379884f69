// Package langserver runs gemkit's own language servers for a workspace
// and answers the code-intelligence tools' questions from them: it is the
// codeintel.Source used when no editor can answer. Servers come from a
// table (gopls, typescript-language-server, pyright or basedpyright,
// rust-analyzer, clangd; the user's config adds or changes entries), are
// started on demand for the language of the file asked about, one per
// language, kept in step with the files on disk, stopped when idle, and
// restarted once after a crash.
//
// One Pool serves a workspace; internal/lspbroker shares it between every
// agent working there, so that two agents do not start two gopls.
package langserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/config"
	"github.com/gemkit/gemkit/internal/permission"
)

// Server is one entry of the table: a language server and the files it
// serves.
type Server struct {
	// Name identifies the entry ("gopls"); a user's entry with the name
	// of a built-in one changes it.
	Name string `json:"name"`
	// Language names the language in messages ("Go").
	Language string `json:"language,omitempty"`
	// Extensions are the file name extensions it serves, with the dot
	// (".go"), each mapped to the LSP language id sent in didOpen.
	Extensions map[string]string `json:"extensions,omitempty"`
	// Command starts it, speaking LSP on stdin and stdout; Command[0] is
	// looked up on PATH.
	Command []string `json:"command,omitempty"`
	// RootMarkers are files whose presence says the workspace holds this
	// language's project (go.mod, tsconfig.json); they are looked for
	// besides the files' extensions.
	RootMarkers []string `json:"rootMarkers,omitempty"`
	// InitializationOptions are sent in initialize.
	InitializationOptions json.RawMessage `json:"initializationOptions,omitempty"`
	// Settings answer the server's workspace/configuration requests (by
	// section, dotted) and are sent once in
	// workspace/didChangeConfiguration.
	Settings json.RawMessage `json:"settings,omitempty"`
	// Install says how to install it, for the message when it is missing.
	Install string `json:"install,omitempty"`
	// Warmup (a Go duration) is how long after its start the server may
	// answer a workspace symbol search with nothing while it still reads
	// the workspace, without reporting progress (pyright): such an answer
	// is asked again, a few times a second, until then.
	Warmup string `json:"warmup,omitempty"`
	// AllowedHosts are the hosts (as network.allowedHosts of an
	// extension: "proxy.golang.org", "*.example.com:443") the server may
	// reach through gemkit's allowlisting proxy; none by default, since a
	// server runs with no network. For gopls, naming Go's module proxy
	// and checksum database lets it download missing modules into its
	// own module cache.
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	// Disabled leaves the entry out (a user's way to turn a built-in
	// server off).
	Disabled bool `json:"disabled,omitempty"`
}

// Builtin is the table gemkit starts from. For a language with two
// servers (Python's pyright and basedpyright), the first one on PATH
// serves it.
func Builtin() []Server {
	ts := map[string]string{".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript", ".cts": "typescript",
		".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript"}
	py := map[string]string{".py": "python", ".pyi": "python"}
	pyMarkers := []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "pyrightconfig.json"}
	return []Server{
		{Name: "gopls", Language: "Go", Extensions: map[string]string{".go": "go"}, Command: []string{"gopls"},
			RootMarkers: []string{"go.mod", "go.work"},
			// Diagnostics on request give a file's problems in gopls's
			// current view at once, where the ones it publishes for the
			// packages a change affects come a second or more later. A
			// hover's link to pkg.go.dev is noise to a model.
			InitializationOptions: json.RawMessage(`{"pullDiagnostics":true}`),
			Settings:              json.RawMessage(`{"gopls":{"linksInHover":false}}`),
			Install:               "go install golang.org/x/tools/gopls@latest (with Go 1.26, golang.org/x/tools/gopls@v0.23.0)"},
		{Name: "typescript-language-server", Language: "TypeScript and JavaScript", Extensions: ts,
			Command: []string{"typescript-language-server", "--stdio"}, RootMarkers: []string{"tsconfig.json", "jsconfig.json", "package.json"},
			// The syntax-only server answers references from the open
			// files alone; the full one reads the project.
			InitializationOptions: json.RawMessage(`{"tsserver":{"useSyntaxServer":"never"}}`),
			Install:               "npm install -g typescript-language-server typescript"},
		{Name: "pyright", Language: "Python", Extensions: py, Command: []string{"pyright-langserver", "--stdio"},
			RootMarkers: pyMarkers, Warmup: "10s", Install: "npm install -g pyright"},
		{Name: "basedpyright", Language: "Python", Extensions: py, Command: []string{"basedpyright-langserver", "--stdio"},
			RootMarkers: pyMarkers, Warmup: "10s", Install: "pip install basedpyright"},
		{Name: "rust-analyzer", Language: "Rust", Extensions: map[string]string{".rs": "rust"}, Command: []string{"rust-analyzer"},
			RootMarkers: []string{"Cargo.toml"}, Install: "rustup component add rust-analyzer"},
		{Name: "clangd", Language: "C and C++", Extensions: map[string]string{".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
			".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".m": "objective-c", ".mm": "objective-cpp"},
			Command: []string{"clangd"}, RootMarkers: []string{"compile_commands.json", "compile_flags.txt", ".clangd", "CMakeLists.txt"},
			Install: "apt-get install clangd (on macOS: brew install llvm)"},
	}
}

// Config is the code-intelligence part of gemkit's config file (the
// "codeIntel" object of gemkit/config.json).
type Config struct {
	// Servers are added to the built-in table, or change an entry of the
	// same name (the fields given replace the built-in ones).
	Servers []Server `json:"languageServers,omitempty"`
	// IdleTimeout (a Go duration) stops a server nobody asked for this
	// long; default DefaultIdleTimeout.
	IdleTimeout string `json:"idleTimeout,omitempty"`
	// RequestTimeout (a Go duration) bounds one request to a server;
	// default DefaultRequestTimeout.
	RequestTimeout string `json:"requestTimeout,omitempty"`
}

// Defaults of Config.
const (
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultRequestTimeout = 20 * time.Second
)

// ParseConfig decodes and checks the "codeIntel" object (raw may be
// empty: the defaults). Unknown fields are errors, so a typo is not
// ignored; from names the file in messages.
func ParseConfig(raw json.RawMessage, from string) (Config, error) {
	var c Config
	if err := config.Decode(raw, from, "codeIntel", &c); err != nil {
		return Config{}, err
	}
	if _, _, err := c.Timeouts(); err != nil {
		return c, fmt.Errorf("%s: codeIntel: %w", from, err)
	}
	if _, err := c.Table(); err != nil {
		return c, fmt.Errorf("%s: codeIntel: %w", from, err)
	}
	return c, nil
}

// Timeouts are the idle and request timeouts, defaults filled in.
func (c Config) Timeouts() (idle, request time.Duration, err error) {
	idle, request = DefaultIdleTimeout, DefaultRequestTimeout
	for _, f := range []struct {
		name, v string
		to      *time.Duration
	}{{"idleTimeout", c.IdleTimeout, &idle}, {"requestTimeout", c.RequestTimeout, &request}} {
		if f.v == "" {
			continue
		}
		d, err := time.ParseDuration(f.v)
		if err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("%s %q: use a positive Go duration such as 30s or 10m", f.name, f.v)
		}
		*f.to = d
	}
	return idle, request, nil
}

// Table is the built-in table with the user's entries applied: an entry
// named like a built-in one changes the fields it sets; a new one comes
// before the built-in servers of its extensions, so that it is chosen
// first. Disabled entries are left out.
func (c Config) Table() ([]Server, error) {
	table := Builtin()
	var added []Server
	for i, u := range c.Servers {
		if u.Name == "" {
			return nil, fmt.Errorf("languageServers[%d] has no name", i)
		}
		j := slices.IndexFunc(table, func(s Server) bool { return s.Name == u.Name })
		if j < 0 {
			if len(u.Extensions) == 0 || len(u.Command) == 0 {
				return nil, fmt.Errorf("languageServers[%d] (%s) is not a built-in server: it needs extensions and command", i, u.Name)
			}
			for ext := range u.Extensions {
				if !strings.HasPrefix(ext, ".") {
					return nil, fmt.Errorf("languageServers[%d] (%s): extension %q must start with a dot", i, u.Name, ext)
				}
			}
			if u.Language == "" {
				u.Language = u.Name
			}
			added = append(added, u)
			continue
		}
		s := &table[j]
		if u.Language != "" {
			s.Language = u.Language
		}
		if len(u.Extensions) > 0 {
			s.Extensions = u.Extensions
		}
		if len(u.Command) > 0 {
			s.Command = u.Command
		}
		if len(u.RootMarkers) > 0 {
			s.RootMarkers = u.RootMarkers
		}
		if len(u.InitializationOptions) > 0 {
			s.InitializationOptions = u.InitializationOptions
		}
		if len(u.Settings) > 0 {
			s.Settings = u.Settings
		}
		if u.Install != "" {
			s.Install = u.Install
		}
		if u.Warmup != "" {
			s.Warmup = u.Warmup
		}
		if len(u.AllowedHosts) > 0 {
			s.AllowedHosts = u.AllowedHosts
		}
		s.Disabled = u.Disabled
	}
	out := append(added, table...)
	for _, s := range out {
		for _, h := range s.AllowedHosts {
			if _, err := permission.ParseHost(h); err != nil {
				return nil, fmt.Errorf("languageServers (%s): allowedHosts: %w", s.Name, err)
			}
		}
		if s.Warmup == "" {
			continue
		}
		if d, err := time.ParseDuration(s.Warmup); err != nil || d < 0 {
			return nil, fmt.Errorf("languageServers (%s): warmup %q: use a Go duration such as 10s", s.Name, s.Warmup)
		}
	}
	return slices.DeleteFunc(out, func(s Server) bool { return s.Disabled }), nil
}

// LookPath finds a program on PATH; exec.LookPath, or a stand-in in
// tests.
type LookPath func(file string) (string, error)

// choice is the server chosen for one extension: the first entry of the
// table serving it whose command is on PATH.
type choice struct {
	server Server
	path   string // Command[0] found on PATH
}

// choose returns the server for a file's extension; err is a
// *codeintel.NoServerError-like message built by the Pool.
func choose(table []Server, ext string, look LookPath) (choice, []Server, error) {
	var tried []Server
	for _, s := range table {
		if _, ok := s.Extensions[ext]; !ok {
			continue
		}
		tried = append(tried, s)
		p, err := look(s.Command[0])
		if err == nil {
			return choice{server: s, path: p}, tried, nil
		}
	}
	return choice{}, tried, errNoServer
}

var errNoServer = errors.New("no server")

// languageID is the LSP language id of a file.
func (s Server) languageID(path string) string {
	if id := s.Extensions[strings.ToLower(filepath.Ext(path))]; id != "" {
		return id
	}
	return strings.TrimPrefix(filepath.Ext(path), ".")
}

// ConfigFile reads the "codeIntel" object of the config file at path (a
// missing file, or one without it, gives the defaults); the file is read
// by config.Read, as every owner of a section reads it.
func ConfigFile(path string) (Config, error) {
	f, err := config.Read(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(f.CodeIntel, f.Path)
}
