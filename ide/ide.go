// Package ide holds the Gemini CLI IDE-mode protocol shared by both ends of
// the connection, as the [IDE companion spec] describes it: the wire types
// ([DiscoveryFile], [Context], [File]), the method and tool names, the
// limits the real client applies ([MaxOpenFiles], [MaxSelectedTextLength],
// [DiffTimeout]), and the environment variables that tie a terminal to its
// editor. "The real client" is the Gemini CLI's IdeClient and "the official
// companion" its VS Code extension, at the version gemkit pins
// (interop/package.json, [Gemini CLI 0.61.0]); each comment names the
// upstream file it follows, and docs/architecture.md lists them all for a
// version bump.
//
// A companion (the server an editor runs,
// [github.com/gemkit/gemkit/companion]) and a client (the CLI side,
// [github.com/gemkit/gemkit/client]) both import this package, so a
// value written by one is read by the other with the same meaning. They
// speak [MCP] ([ProtocolVersion]) over Streamable HTTP. Optional fields are
// pointers or carry `omitempty`, because the real client treats a JSON null
// as a schema violation and disconnects (the zod schemas of gemini-cli
// 0.61.0 packages/core/src/ide/types.ts).
//
// [IDE companion spec]: https://geminicli.com/docs/ide-integration/ide-companion-spec
// [Gemini CLI 0.61.0]: https://github.com/google-gemini/gemini-cli/tree/v0.61.0/packages/core/src/ide
// [MCP]: https://modelcontextprotocol.io/specification/2025-06-18
package ide

import "time"

// Names of the MCP tools a companion registers.
const (
	ToolOpenDiff  = "openDiff"
	ToolCloseDiff = "closeDiff"
)

// Names of the JSON-RPC notifications a companion sends to its clients.
const (
	MethodContextUpdate = "ide/contextUpdate"
	MethodDiffAccepted  = "ide/diffAccepted"
	MethodDiffRejected  = "ide/diffRejected"
	// MethodDiffClosed is the legacy name for a rejected diff; clients
	// still accept it, companions no longer send it.
	MethodDiffClosed = "ide/diffClosed"
)

// ServerName is the MCP server name the official companion reports
// (gemini-cli 0.61.0 packages/vscode-ide-companion/src/ide-server.ts); ours
// reports the same so that clients keyed on it behave identically.
const ServerName = "gemini-cli-companion-mcp-server"

// Limits the real client enforces when it normalises a context update
// (gemini-cli 0.61.0 packages/core/src/ide/constants.ts, used by
// IdeContextStore.set in packages/core/src/ide/ideContext.ts), and that a
// companion applies before sending so that nothing is cut twice.
const (
	// MaxOpenFiles is the number of most recent files kept in a context.
	MaxOpenFiles = 10
	// MaxSelectedTextLength is the number of characters of a selection kept.
	MaxSelectedTextLength = 16384
	// TruncatedSuffix is appended by the client to a selection it cut.
	TruncatedSuffix = "... [TRUNCATED]"
	// ContextDebounce is how long a companion waits for editor events to
	// settle before it sends one context update for all of them.
	ContextDebounce = 50 * time.Millisecond
	// MaxRequestBody bounds every HTTP request body a companion reads.
	MaxRequestBody = 10 << 20
	// DiffTimeout is how long the real client waits for a diff's outcome
	// (IDE_REQUEST_TIMEOUT_MS in gemini-cli 0.61.0
	// packages/core/src/ide/constants.ts).
	DiffTimeout = 10 * time.Minute
)

// ProtocolVersion is the MCP protocol version the real client negotiates:
// LATEST_PROTOCOL_VERSION of the @modelcontextprotocol/sdk that gemini-cli
// 0.61.0 packages/core/src/ide/ide-client.ts connects with.
const ProtocolVersion = "2025-06-18"

// Environment variables a companion sets in its editor's terminals and a
// client reads.
const (
	EnvServerPort      = "GEMINI_CLI_IDE_SERVER_PORT"
	EnvWorkspacePath   = "GEMINI_CLI_IDE_WORKSPACE_PATH"
	EnvAuthToken       = "GEMINI_CLI_IDE_AUTH_TOKEN"
	EnvPID             = "GEMINI_CLI_IDE_PID"
	EnvServerStdioCmd  = "GEMINI_CLI_IDE_SERVER_STDIO_COMMAND"
	EnvServerStdioArgs = "GEMINI_CLI_IDE_SERVER_STDIO_ARGS"
)

// Environment variables Qwen Code reads in place of Gemini CLI's (its
// IdeClient in @qwen-code/qwen-code 0.24.4, packages/core/src/ide/ide-client.ts):
// it has no token variable (the token comes from its lock file only) and no
// editor-pid override.
const (
	EnvQwenServerPort      = "QWEN_CODE_IDE_SERVER_PORT"
	EnvQwenWorkspacePath   = "QWEN_CODE_IDE_WORKSPACE_PATH"
	EnvQwenServerStdioCmd  = "QWEN_CODE_IDE_SERVER_STDIO_COMMAND"
	EnvQwenServerStdioArgs = "QWEN_CODE_IDE_SERVER_STDIO_ARGS"
	// EnvQwenHome moves Qwen Code's folder (default ~/.qwen), and with it
	// the folder of its lock files.
	EnvQwenHome = "QWEN_HOME"
)

// QwenProtocolVersion is the MCP protocol version Qwen Code 0.24.4 sends at
// initialize (LATEST_PROTOCOL_VERSION of the MCP SDK it bundles), and
// QwenClientVersion the clientInfo version it sends whatever its own
// version (a constant in its IdeClient).
const (
	QwenProtocolVersion = "2025-11-25"
	QwenClientVersion   = "1.0.0"
)

// Client names the IdeClient of Gemini CLI and of Qwen Code send at
// initialize, over HTTP and over stdio (gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts).
const (
	ClientNameHTTP  = "streamable-http-client"
	ClientNameStdio = "stdio-client"
)

// Discovery-file naming: os.TempDir()/gemini/ide/gemini-ide-server-<pid>-<port>.json.
const (
	DiscoveryDirName    = "gemini/ide"
	DiscoveryFilePrefix = "gemini-ide-server-"
	DiscoveryFileSuffix = ".json"
)

// HTTP paths and headers of a companion.
const (
	MCPPath               = "/mcp"
	KeepAlivePath         = "/keep-alive"
	WriteFilePath         = "/write-file"
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// Defaults for the ideInfo of a companion started without names.
const (
	DefaultIDEName        = "gemkit"
	DefaultIDEDisplayName = "gemkit"
)

// Cursor is a 1-based position in a file.
type Cursor struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// File is one open file in an IdeContext.
type File struct {
	// Path is absolute.
	Path string `json:"path"`
	// Timestamp is when the file was last focused, in milliseconds since the
	// Unix epoch, as the official companion sends it (gemini-cli 0.61.0
	// packages/vscode-ide-companion/src/open-files-manager.ts).
	Timestamp int64 `json:"timestamp"`
	// IsActive is set only on the focused file.
	IsActive     bool    `json:"isActive,omitempty"`
	Cursor       *Cursor `json:"cursor,omitempty"`
	SelectedText string  `json:"selectedText,omitempty"`
}

// WorkspaceState is the editor's state as the client sees it.
type WorkspaceState struct {
	OpenFiles []File `json:"openFiles"`
	IsTrusted *bool  `json:"isTrusted,omitempty"`
}

// Context is the params of an ide/contextUpdate notification.
type Context struct {
	WorkspaceState *WorkspaceState `json:"workspaceState,omitempty"`
}

// OpenDiffRequest is the arguments of the openDiff tool.
type OpenDiffRequest struct {
	FilePath   string `json:"filePath"`
	NewContent string `json:"newContent"`
}

// CloseDiffRequest is the arguments of the closeDiff tool.
// SuppressNotification is deprecated and has no effect: closing a diff
// through closeDiff never sends an accept or reject notification.
type CloseDiffRequest struct {
	FilePath             string `json:"filePath"`
	SuppressNotification bool   `json:"suppressNotification,omitempty"`
}

// CloseDiffResult is the JSON carried in the text block of a closeDiff
// result. Content is nil when no diff was open for the file; it is then left
// out ({}), as the official companion does (closeDiff in gemini-cli 0.61.0
// packages/vscode-ide-companion/src/ide-server.ts), rather than sent as null.
type CloseDiffResult struct {
	Content *string `json:"content,omitempty"`
}

// DiffAccepted is the params of an ide/diffAccepted notification.
type DiffAccepted struct {
	FilePath string `json:"filePath"`
	Content  string `json:"content"`
}

// DiffRejected is the params of an ide/diffRejected notification.
type DiffRejected struct {
	FilePath string `json:"filePath"`
}

// IDEInfo names the editor in a discovery file. Without it the real client
// refuses to connect from a terminal it does not recognise (detectIde in
// gemini-cli 0.61.0 packages/core/src/ide/detect-ide.ts).
type IDEInfo struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
}

// StdioConfig is the optional discovery-file entry for a companion reached
// over MCP stdio instead of HTTP.
type StdioConfig struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
}

// DiscoveryFile is the content of gemini-ide-server-<pid>-<port>.json,
// and of Qwen Code's <port>.lock, which adds PPID and IDEName.
type DiscoveryFile struct {
	Port          int          `json:"port,omitempty"`
	WorkspacePath string       `json:"workspacePath"`
	AuthToken     string       `json:"authToken,omitempty"`
	IDEInfo       *IDEInfo     `json:"ideInfo,omitempty"`
	Stdio         *StdioConfig `json:"stdio,omitempty"`
	// PPID is a process that lives as long as the companion: Qwen Code
	// deletes a lock file whose PPID has ended.
	PPID int `json:"ppid,omitempty"`
	// IDEName is the editor's name as Qwen Code's own companion writes
	// it; Qwen Code reads IDEInfo instead.
	IDEName string `json:"ideName,omitempty"`
}

// CheckProbePrefix starts the base name of the files `gemkit ide check`
// proposes diffs for, so that a front-end can label them as its test
// diffs rather than changes to review.
const CheckProbePrefix = ".gemkit-ide-check-"
