// Package extension holds the extension system's data model: the
// gemini-extension.json manifest, its validation and variables, and the
// store of installed extensions that gemkit shares with Gemini CLI.
package extension

import "encoding/json"

// ManifestFile is the name of an extension's manifest in its folder.
const ManifestFile = "gemini-extension.json"

// Access is a filesystem scope an extension may ask for.
type Access string

// The filesystem scopes, narrowest first.
const (
	AccessNone      Access = "none"
	AccessWorkspace Access = "workspace"
	AccessHome      Access = "home"
	AccessFull      Access = "full"
)

// Runtime names the interpreter of a tool's executable.
type Runtime string

// The runtimes a tool may declare.
const (
	RuntimeNode   Runtime = "node"
	RuntimePython Runtime = "python"
	RuntimeShell  Runtime = "shell"
)

// Output says how a tool's stdout is read.
type Output string

// The output kinds a tool may declare; an empty Output means OutputString.
const (
	OutputJSON   Output = "json"
	OutputString Output = "string"
)

// ArgType is the type of one tool argument.
type ArgType string

// The argument types a tool may declare.
const (
	ArgString      ArgType = "string"
	ArgNumber      ArgType = "number"
	ArgInteger     ArgType = "integer"
	ArgBoolean     ArgType = "boolean"
	ArgStringArray ArgType = "array"
)

// Manifest is a parsed gemini-extension.json. Fields the manifest has but
// this type does not name are kept in Extra, so that writing a manifest
// back never drops what another tool put there.
type Manifest struct {
	Name            string                     `json:"name"`
	Version         string                     `json:"version"`
	Description     string                     `json:"description,omitempty"`
	Permissions     *Permissions               `json:"permissions,omitempty"`
	MCPServers      map[string]json.RawMessage `json:"mcpServers,omitempty"`
	ContextFileName []string                   `json:"-"`
	ExcludeTools    []string                   `json:"excludeTools,omitempty"`
	Settings        []Setting                  `json:"settings,omitempty"`
	Themes          []json.RawMessage          `json:"themes,omitempty"`
	MigratedTo      string                     `json:"migratedTo,omitempty"`
	Plan            json.RawMessage            `json:"plan,omitempty"`
	Tools           []Tool                     `json:"tools,omitempty"`
	Docs            []Doc                      `json:"docs,omitempty"`
	Examples        []Example                  `json:"examples,omitempty"`

	// Extra holds the fields this type does not name, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

// Permissions is what an extension's tools may reach.
type Permissions struct {
	Filesystem *FilesystemPermissions `json:"filesystem,omitempty"`
	Network    *NetworkPermissions    `json:"network,omitempty"`
}

// FilesystemPermissions are the read and write scopes. An absent scope is
// AccessNone.
type FilesystemPermissions struct {
	Read  Access `json:"read,omitempty"`
	Write Access `json:"write,omitempty"`
}

// NetworkPermissions lists the hosts a tool may connect to. Empty means no
// network at all.
type NetworkPermissions struct {
	AllowedHosts []string `json:"allowedHosts"`
}

// Setting is a value the user gives an extension, passed to its tools and
// MCP servers as the environment variable EnvVar.
type Setting struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	EnvVar      string `json:"envVar"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// Tool is an executable script the extension exposes as a tool.
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Executable  string  `json:"executable"`
	Runtime     Runtime `json:"runtime"`
	Output      Output  `json:"output,omitempty"`
	Args        []Arg   `json:"args,omitempty"`
}

// Arg is one named argument of a tool, passed as --name value.
type Arg struct {
	Name        string  `json:"name"`
	Type        ArgType `json:"type"`
	Description string  `json:"description,omitempty"`
}

// Doc is a document the model may read on demand.
type Doc struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	File        string `json:"file"`
}

// Example shows the model a prompt and the tool call it should lead to.
type Example struct {
	Prompt   string `json:"prompt"`
	ToolCall string `json:"tool_call"`
}
