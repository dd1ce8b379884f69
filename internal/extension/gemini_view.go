package extension

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// This file reads the parts of an extension that Gemini CLI 0.61 shows in
// `gemini extensions list` besides the manifest — its ID, agent skills,
// sub-agents, hooks and the state of its settings — the way Gemini CLI
// reads them, so that both tools list an extension alike.

// ExtensionID is the ID Gemini CLI gives an extension: the hex SHA-256
// of https://github.com/OWNER/REPO for one installed from GitHub (git or
// github-release), else of the install source, else of the manifest
// name. Gemini CLI keys the keychain entries of sensitive settings by it.
func ExtensionID(name string, md *InstallMetadata) string {
	value := name
	if md != nil {
		value = md.Source
		if md.Type == SourceGit || md.Type == SourceGitHubRelease {
			if owner, repo, ok := githubRepo(md.Source); ok {
				value = "https://github.com/" + owner + "/" + repo
			}
		}
		if value == "" {
			value = name
		}
	}
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// githubRepo reads owner and repository from a GitHub source as Gemini
// CLI does: git@github.com:OWNER/REPO, or a URL resolved against
// https://github.com (so "OWNER/REPO" counts too) whose host is
// github.com and whose path has exactly two parts; the first ".git" of
// the repository is dropped.
func githubRepo(source string) (owner, repo string, ok bool) {
	if strings.HasPrefix(source, "git@") {
		rest, found := strings.CutPrefix(source, "git@github.com:")
		if !found {
			return "", "", false
		}
		source = rest
	}
	base, _ := url.Parse("https://github.com")
	ref, err := url.Parse(source)
	if err != nil {
		return "", "", false
	}
	u := base.ResolveReference(ref)
	if strings.ToLower(u.Host) != "github.com" {
		return "", "", false
	}
	var parts []string
	for _, p := range strings.Split(u.Path, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) != 2 {
		return "", "", false
	}
	return parts[0], strings.Replace(parts[1], ".git", "", 1), true
}

// Skill is an agent skill the extension brings: skills/SKILL.md or
// skills/NAME/SKILL.md with a name and description in its front matter.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Location is the SKILL.md file.
	Location string `json:"location"`
}

// Agent is a sub-agent the extension brings: agents/NAME.md (names
// starting with "_" are skipped) with a name and description in its
// front matter.
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	File        string `json:"file"`
}

// Skills lists the extension's agent skills, sorted by file. Files
// without a name and description in their front matter are skipped, as
// Gemini CLI skips them (ScanSkills says why). Like Gemini CLI it
// replaces characters a skill name may not hold (: \ / < > * ? " |)
// with dashes.
func (e *Extension) Skills() []Skill {
	skills, _ := e.ScanSkills()
	return skills
}

var skillNameReplacer = strings.NewReplacer(":", "-", `\`, "-", "/", "-", "<", "-", ">", "-", "*", "-", "?", "-", `"`, "-", "|", "-")

// GeminiView is what Gemini CLI shows of an extension besides its
// manifest and settings: its agent skills (and the SKILL.md files that
// are not skills, with why), sub-agents and hooks.
type GeminiView struct {
	Skills        []Skill
	SkippedSkills []SkippedSkill
	Agents        []Agent
	// Hooks is as Hooks returns it, HooksErr its error.
	Hooks    json.RawMessage
	HooksErr error
}

// GeminiView reads what ScanSkills, Agents and Hooks read, through one
// Root of the extension's folder: a listing shows all three of every
// extension, and opening the folder once instead of three times saves
// as many system calls per extension.
func (e *Extension) GeminiView(workspace string) GeminiView {
	v := GeminiView{Skills: []Skill{}, Agents: []Agent{}}
	root, err := e.Root()
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			v.HooksErr = err
		}
		return v
	}
	defer root.Close()
	if e.IsPlugin() {
		// A plugin brings skills and MCP servers alone (plugin.go).
		v.Skills, v.SkippedSkills = scanPluginSkills(root, e.Plugin)
		return v
	}
	v.Skills, v.SkippedSkills = scanSkills(root)
	v.Agents = agents(root)
	v.Hooks, v.HooksErr = e.hooks(root, workspace)
	return v
}

// Agents lists the extension's sub-agents, sorted by file.
func (e *Extension) Agents() []Agent {
	if e.IsPlugin() {
		return []Agent{}
	}
	root, err := e.Root()
	if err != nil {
		return []Agent{}
	}
	defer root.Close()
	return agents(root)
}

// agents is Agents of the extension folder open as root.
func agents(root *fsutil.Root) []Agent {
	out := []Agent{}
	entries, _ := root.ReadDir("agents")
	for _, d := range entries {
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), "_") || !strings.HasSuffix(d.Name(), ".md") {
			continue
		}
		rel := filepath.Join("agents", d.Name())
		name, desc, ok := readFrontMatter(root, rel)
		if !ok {
			continue
		}
		out = append(out, Agent{Name: name, Description: desc, File: root.Path(rel)})
	}
	return out
}

var frontMatter = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n([\s\S]*))?`) })

// readFrontMatter reads name and description from the "---" block that
// opens a Markdown file. It reads the YAML that skill files use: plain,
// quoted and block (| and >) scalars, and plain values continued on
// indented lines.
func readFrontMatter(root *fsutil.Root, rel string) (name, description string, ok bool) {
	data, err := root.ReadFile(rel, MaxSkillBytes)
	if err != nil {
		return "", "", false
	}
	fields, found := frontMatterFields(data)
	if !found {
		return "", "", false
	}
	name, hasName := fields["name"]
	description, hasDesc := fields["description"]
	return name, description, hasName && hasDesc && name != ""
}

// frontMatterFields reads the top-level fields of the front matter that
// opens data; found is false when data does not open with one.
func frontMatterFields(data []byte) (fields map[string]string, found bool) {
	m := frontMatter().FindSubmatch(data)
	if m == nil {
		return nil, false
	}
	fields = map[string]string{}
	lines := strings.Split(strings.ReplaceAll(string(m[1]), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		key, value, found := strings.Cut(lines[i], ":")
		if !found || strings.HasPrefix(lines[i], " ") || strings.HasPrefix(lines[i], "\t") {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var cont []string
		for i+1 < len(lines) && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t") || (strings.TrimSpace(lines[i+1]) == "" && i+2 < len(lines) && strings.HasPrefix(lines[i+2], " "))) {
			cont = append(cont, strings.TrimSpace(lines[i+1]))
			i++
		}
		// Block scalars end with one newline unless "-" strips it (YAML's
		// chomping), as the YAML parser of Gemini CLI reads them.
		chomp := "\n"
		if strings.Contains(value, "-") {
			chomp = ""
		}
		switch {
		case strings.HasPrefix(value, "|"):
			value = strings.Join(cont, "\n") + chomp
		case strings.HasPrefix(value, ">"):
			value = strings.Join(cont, " ") + chomp
		case len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"'):
			if s, err := unquoteJSON(value); err == nil {
				value = s
			}
		case len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'':
			value = strings.ReplaceAll(value[1:len(value)-1], "''", "'")
		default:
			value = strings.TrimSpace(strings.Join(append([]string{value}, cont...), " "))
		}
		fields[key] = value
	}
	return fields, true
}

func unquoteJSON(s string) (string, error) {
	var out string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}

// Hooks returns the "hooks" object of hooks/hooks.json with
// ${extensionPath}, ${workspacePath}, ${/} and ${pathSeparator}
// replaced, as Gemini CLI runs them; nil when there is no such file or
// it does not hold a "hooks" object (Gemini CLI then loads no hooks).
// Unlike Gemini CLI, it does not substitute the extension's settings
// into them: those may be secrets, and this is for showing.
func (e *Extension) Hooks(workspace string) (json.RawMessage, error) {
	if e.IsPlugin() {
		return nil, nil
	}
	root, err := e.Root()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return e.hooks(root, workspace)
}

// hooks is Hooks of the extension folder open as root.
func (e *Extension) hooks(root *fsutil.Root, workspace string) (json.RawMessage, error) {
	raw, err := root.ReadFile(filepath.Join("hooks", "hooks.json"), maxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var file struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("hooks/hooks.json: %w", err)
	}
	if len(file.Hooks) == 0 || file.Hooks[0] != '{' {
		return nil, errors.New(`hooks/hooks.json: "hooks" must be an object; Gemini CLI loads no hooks from it`)
	}
	vars := Variables{ExtensionPath: e.Dir, WorkspacePath: workspace}
	return vars.ExpandJSON(file.Hooks)
}

// SettingState is whether one of the extension's settings has a value,
// and where Gemini CLI found it. The value itself is never read into
// it.
type SettingState struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	EnvVar      string `json:"envVar"`
	Sensitive   bool   `json:"sensitive"`
	// Set is whether the setting has a value; nil when gemkit cannot
	// tell (a sensitive value kept in the system keychain, which gemkit
	// does not read).
	Set *bool `json:"set"`
	// Scope is "workspace" or "user" when set; the workspace wins.
	Scope string `json:"scope,omitempty"`
	// Source is the .env file holding the value.
	Source string `json:"source,omitempty"`
	// Passed: gemkit's tools and sandboxed servers get a value, the one
	// in the extension's entry's .env (Installed.UserSettingsDir); the
	// workspace's .env is Gemini CLI's alone.
	Passed bool `json:"passedByGemkit"`
}

// UserSettingsDir is the folder whose .env holds the user values of the
// extension's settings, as Gemini CLI 0.61 finds it: its entry in the
// extensions folder named after its manifest, the entry that records the
// link for a linked extension (never the linked folder).
func (in *Installed) UserSettingsDir() string {
	if m := in.Manifest(); m != nil {
		return filepath.Join(filepath.Dir(in.Entry), m.Name)
	}
	return in.Entry
}

// IgnoredSettings are the settings a linked extension's own folder's
// .env gives values to that its entry's .env does not: Gemini CLI reads
// only the entry's, and so does gemkit.
func (in *Installed) IgnoredSettings() []string {
	m := in.Manifest()
	if m == nil || in.Extension == nil || len(m.Settings) == 0 || filepath.Clean(in.Extension.Dir) == filepath.Clean(in.UserSettingsDir()) {
		return nil
	}
	own, user := envKeys(in.Extension.Dir, ".env"), envKeys(in.UserSettingsDir(), ".env")
	var out []string
	for _, s := range m.Settings {
		if own[s.EnvVar] && !user[s.EnvVar] {
			out = append(out, s.EnvVar)
		}
	}
	return out
}

// Settings says which of the extension's settings are set and where, as
// Gemini CLI resolves them: the user value is in the .env file of the
// extension's entry in the extensions folder (named after the manifest),
// the workspace value in the workspace's .env file (Gemini CLI reads it
// in trusted folders only), and sensitive values may instead be in the
// system keychain.
func (in *Installed) Settings(extensionsDir, workspace string) []SettingState {
	m := in.Manifest()
	out := []SettingState{}
	if m == nil || len(m.Settings) == 0 {
		return out
	}
	userEnv := filepath.Join(extensionsDir, m.Name, ".env")
	wsEnv := filepath.Join(workspace, ".env")
	userKeys, wsKeys := envKeys(filepath.Join(extensionsDir, m.Name), ".env"), envKeys(workspace, ".env")
	for _, s := range m.Settings {
		st := SettingState{Name: s.Name, Description: s.Description, EnvVar: s.EnvVar, Sensitive: s.Sensitive}
		yes := true
		st.Passed = userKeys[s.EnvVar]
		switch {
		case wsKeys[s.EnvVar]:
			st.Set, st.Scope, st.Source = &yes, "workspace", wsEnv
		case userKeys[s.EnvVar]:
			st.Set, st.Scope, st.Source = &yes, "user", userEnv
		case s.Sensitive:
		default:
			no := false
			st.Set = &no
		}
		out = append(out, st)
	}
	return out
}

// envKeys returns the names the .env file name in dir gives values to,
// read through a Root of dir (the extension's folder, or the workspace,
// where a tool may have made it a link or a FIFO). Only the names are
// kept.
func envKeys(dir, name string) map[string]bool {
	keys := map[string]bool{}
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return keys
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return keys
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxManifestBytes))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		line = bytes.TrimPrefix(line, []byte("export "))
		k, _, found := bytes.Cut(line, []byte("="))
		if !found || len(line) == 0 || line[0] == '#' {
			continue
		}
		keys[string(bytes.TrimSpace(k))] = true
	}
	return keys
}

// MissingContextFiles returns a problem for each context file the
// manifest names in contextFileName that does not exist. Gemini CLI
// skips such files when it loads the extension (so gemkit lists the
// extension as fine), but `gemini extensions validate` fails on them, and
// so does `gemkit extensions validate`. The default GEMINI.md, when not
// named, may be missing. A context file that leads out of the folder
// through a symbolic link, named or the default, is a problem of its own
// (contextLeadsOut); a name outside the folder is the manifest check's.
func (e *Extension) MissingContextFiles() []Problem {
	var out []Problem
	root, err := e.Root()
	if err != nil {
		return nil
	}
	defer root.Close()
	names := e.Manifest.ContextFiles()
	for i, name := range names {
		if name == "" {
			continue // not a name: the manifest's check says so
		}
		path := "contextFileName"
		if len(names) > 1 {
			path = fmt.Sprintf("contextFileName[%d]", i)
		}
		rel, err := e.RelName(name)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		fi, err := root.Stat(rel)
		switch {
		case errors.Is(err, fsutil.ErrOutside):
			out = append(out, contextLeadsOut(root, path, name, rel))
		case len(e.Manifest.ContextFileName) == 0:
		case err != nil || !fi.Mode().IsRegular():
			out = append(out, Problem{Path: path,
				Message: fmt.Sprintf("%q does not exist; Gemini CLI loads the extension without it, but `gemini extensions validate` fails", name),
				Fix:     fmt.Sprintf("create %s in the extension folder, or remove it from contextFileName", name), Effect: EffectWarning})
		}
	}
	return out
}

// contextLeadsOut is the problem of the context file name (rel in
// root) that leads out of the extension's folder through a symbolic
// link: Gemini CLI 0.61 follows it and gives the model what it leads to
// in every session (a link to a key file reached the model's requests),
// where gemkit reads nothing out of the folder.
func contextLeadsOut(root *fsutil.Root, path, name, rel string) Problem {
	how := fmt.Sprintf("%q leads out of the extension folder through a symbolic link", name)
	if target, err := root.Readlink(rel); err == nil {
		how = fmt.Sprintf("%q is a symbolic link to %s, outside the extension folder", name, target)
	}
	return Problem{Path: path,
		Message: how + ": Gemini CLI follows it and gives the model what it leads to as context, in every session",
		Fix:     fmt.Sprintf("put the file itself at %s in the extension folder, or remove it from contextFileName", name), Effect: EffectWarning}
}
