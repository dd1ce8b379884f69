package conformance

// The checks, in the order they run. Each ID is stable; Qwen Code's lock
// file is checked under the same IDs as Gemini CLI's discovery file.

const fieldsTitle = "Fields port, workspacePath, authToken, ideInfo"

// discoveryChecks check the discovery file Gemini CLI would pick
// (discovery.go).
var discoveryChecks = []check{
	{"discovery.file", "A discovery file the CLI would pick", (*env).discoveryFile},
	{"discovery.name", "File name gemini-ide-server-<pid>-<port>.json", (*env).discoveryName},
	{"discovery.mode", "File mode 0600 (it holds the token)", (*env).fileMode},
	{"discovery.owner", "Owned by this user", (*env).fileOwner},
	{"discovery.pid", "The pid in the name runs", (*env).discoveryPID},
	{"discovery.fields", fieldsTitle, (*env).discoveryFields},
	{"discovery.ideInfo", "ideInfo names the editor", (*env).discoveryIDEInfo},
	{"discovery.workspace", "The current directory is inside the workspace", (*env).workspace},
}

// qwenDiscoveryChecks check the lock file Qwen Code would pick
// (IdeClient.getConnectionConfigFromFile in @qwen-code/qwen-code 0.24.4
// packages/core/src/ide/ide-client.ts): its name, mode, ppid (whose end
// makes Qwen Code delete it), fields and ideInfo, and the workspace.
var qwenDiscoveryChecks = []check{
	{"discovery.file", "A lock file Qwen Code would pick", (*env).qwenFile},
	{"discovery.name", "File name <port>.lock in Qwen Code's ide folder", (*env).qwenName},
	{"discovery.mode", "File mode 0600 (it holds the token)", (*env).fileMode},
	{"discovery.pid", "A ppid that lives as long as the companion", (*env).qwenPPID},
	{"discovery.fields", fieldsTitle, (*env).qwenFields},
	{"discovery.ideInfo", "ideInfo names the editor", (*env).qwenIDEInfo},
	{"discovery.workspace", "The current directory is inside the workspace", (*env).workspace},
}

// The checks of the endpoint (conformance.go).
var (
	fallbackCheck = check{id: "connect.fallback", title: "The CLI reaches the companion"}
	connectCheck  = check{id: "connect", title: "An endpoint to connect to"}
	httpCheck     = check{id: "http", title: "HTTP guard (token, Host, Origin)"}
)

// httpChecks speak raw HTTP to the companion, without an MCP SDK, to see
// exactly what it answers (http.go).
var httpChecks = []check{
	{"http.auth-missing", "A request without a token is refused", refused(noToken, 401, "any local process or web page could drive the editor")},
	{"http.auth-wrong", "A request with a wrong token is refused", refused(wrongToken, 401, "the token is not checked")},
	{"http.origin", "A request with an Origin header is refused", refused(withOrigin, 403, "a web page in a browser could reach the companion")},
	{"http.host", "A request for a foreign Host is refused", refused(foreignHost, 403, "DNS rebinding could reach the companion")},
	{"mcp.initialize", "MCP initialize", (*env).initialize},
	{"mcp.initialized", "notifications/initialized is accepted (202)", (*env).initialized},
	{"mcp.session-required", "A request without a session is refused", (*env).sessionRequired},
	{"mcp.tools", "openDiff and closeDiff with the right schemas", (*env).toolSchemas},
	{"mcp.initial-context", "The GET stream starts with ide/contextUpdate", (*env).initialContext},
}

// clientChecks connect as the CLI does and try the diff tools
// (client.go).
var clientChecks = []check{
	{"client.connect", "Connects as the real CLI does", (*env).connect},
	{"client.diffing", "Diffing enabled (openDiff and closeDiff listed)", (*env).diffing},
	{"client.context", "The client receives the editor's context", (*env).receivesContext},
	{"diff.close-none", `closeDiff without a diff answers {"content": null}`, (*env).closeNone},
	{"diff.open-close", "openDiff is acknowledged; closeDiff returns the proposal without a notification", (*env).openClose},
	{"diff.accept", "Accepting in the editor sends ide/diffAccepted with the final text", (*env).accept},
	{"diff.reject", "Rejecting in the editor sends ide/diffRejected", (*env).reject},
}
