package extension

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"syscall"
)

//go:embed templates
var templateFS embed.FS

// Template is a starting point for `gemkit extensions new`.
type Template struct {
	Name        string
	Description string
}

// DefaultTemplate is the template `new` uses when none is named.
const DefaultTemplate = "tools"

// Templates lists the templates, each of which passes Validate as created.
func Templates() []Template {
	return []Template{
		{"tools", "three executable tools: Python, Node.js and shell, with a doc and examples"},
		{"python", "one executable tool in Python"},
		{"node", "one executable tool in Node.js"},
		{"shell", "one executable tool in shell"},
		{"context", "context only: a GEMINI.md added to every session"},
		{"mcp", "an MCP server (Node.js, no dependencies) with one tool"},
		{"commands", "a custom slash command in commands/"},
	}
}

// geminiTemplates maps the names of Gemini CLI's own templates
// (`gemini extensions new DIR TEMPLATE`, gemini-cli 0.61.0's bundled
// examples) to gemkit's: the same name a person already knows gives the
// nearest template, or says there is none.
var geminiTemplates = map[string]string{
	"mcp-server":      "mcp",
	"custom-commands": "commands",
	"exclude-tools":   "",
	"hooks":           "",
	"policies":        "",
	"skills":          "",
	"themes-example":  "",
}

// TemplateAliases lists Gemini CLI's template names that name one of
// gemkit's, for completion and help.
func TemplateAliases() map[string]string {
	out := map[string]string{}
	for k, v := range geminiTemplates {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// CreateFromTemplate writes the template into dir, which must not exist or
// be empty, naming the extension after dir's last element. It returns the
// files it wrote, relative to dir; on failure dir is left as it was.
func CreateFromTemplate(dir, template string) ([]string, error) {
	if template == "" {
		template = DefaultTemplate
	}
	if alias, ok := geminiTemplates[template]; ok {
		if alias == "" {
			return nil, fmt.Errorf("gemkit has no template like Gemini CLI's %q; `gemini extensions new %s %s` creates it, and gemkit manages the result like any extension", template, dir, template)
		}
		template = alias
	}
	known := false
	var names []string
	for _, t := range Templates() {
		names = append(names, t.Name)
		known = known || t.Name == template
	}
	if !known {
		return nil, fmt.Errorf("no template %q; choose one of %s", template, strings.Join(names, ", "))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	name := suggestName(filepath.Base(abs))
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s exists and is not empty; give a new folder", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, err
	}
	// Write into a temporary folder next to dir and rename it into place
	// (over an empty dir too), so a failure leaves no half-written
	// extension.
	tmp, err := os.MkdirTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".new-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	root := path.Join("templates", template)
	var written []string
	err = fs.WalkDir(templateFS, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if rel == "" {
			return nil
		}
		target := filepath.Join(tmp, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := templateFS.ReadFile(p)
		if err != nil {
			return err
		}
		data = []byte(strings.ReplaceAll(string(data), "{{name}}", name))
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(rel, "tools/") {
			mode = 0o755
		}
		if err := os.WriteFile(target, data, mode); err != nil {
			return err
		}
		written = append(written, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write the template: %w", err)
	}
	// rename(2) itself, not os.Rename, which refuses to replace even an
	// empty folder; the system call does so atomically and fails on a
	// folder that has meanwhile got files.
	if err := syscall.Rename(tmp, abs); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	return written, nil
}
