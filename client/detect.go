package client

import (
	"errors"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// Known editors, by the names the real client uses for them (IDE_DEFINITIONS
// in gemini-cli 0.61.0 packages/core/src/ide/detect-ide.ts).
var (
	ideVSCode      = ide.IDEInfo{Name: "vscode", DisplayName: "VS Code"}
	ideVSCodeFork  = ide.IDEInfo{Name: "vscodefork", DisplayName: "IDE"}
	ideJetBrains   = ide.IDEInfo{Name: "jetbrains", DisplayName: "JetBrains IDE"}
	jetbrainsBrand = []struct {
		needle string
		info   ide.IDEInfo
	}{
		{"idea", ide.IDEInfo{Name: "intellijidea", DisplayName: "IntelliJ IDEA"}},
		{"webstorm", ide.IDEInfo{Name: "webstorm", DisplayName: "WebStorm"}},
		{"pycharm", ide.IDEInfo{Name: "pycharm", DisplayName: "PyCharm"}},
		{"goland", ide.IDEInfo{Name: "goland", DisplayName: "GoLand"}},
		{"studio", ide.IDEInfo{Name: "androidstudio", DisplayName: "Android Studio"}},
		{"clion", ide.IDEInfo{Name: "clion", DisplayName: "CLion"}},
		{"rustrover", ide.IDEInfo{Name: "rustrover", DisplayName: "RustRover"}},
		{"datagrip", ide.IDEInfo{Name: "datagrip", DisplayName: "DataGrip"}},
		{"phpstorm", ide.IDEInfo{Name: "phpstorm", DisplayName: "PhpStorm"}},
	}
)

// ErrUnsupportedEnvironment is the real client's refusal (IdeClient.connect
// in gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts) when it cannot
// tell which editor it runs in: the discovery file has no ideInfo and the
// terminal is not one it recognises. Its text is the real client's own.
var ErrUnsupportedEnvironment = errors.New("IDE integration is not supported in your current environment. To use this feature, run Gemini CLI in one of these supported IDEs: Antigravity, VS Code, or VS Code forks.")

// DetectIDE decides which editor the CLI runs in, with the real client's
// rules (detectIde in gemini-cli 0.61.0 packages/core/src/ide/detect-ide.ts):
// a discovery file's ideInfo with both names wins; otherwise only the
// terminals it supports (TERM_PROGRAM vscode, sublime or Zed, ZED_SESSION_ID,
// XCODE_VERSION_ACTUAL, a JetBrains TERMINAL_EMULATOR) are recognised, and
// nil means the real client refuses to connect. ideCommand is the editor
// process's command line.
func DetectIDE(fromFile *ide.IDEInfo, ideCommand string, getenv func(string) string) *ide.IDEInfo {
	if fromFile != nil && fromFile.Name != "" && fromFile.DisplayName != "" {
		info := *fromFile
		return &info
	}
	term := getenv("TERM_PROGRAM")
	jetbrains := strings.Contains(strings.ToLower(getenv("TERMINAL_EMULATOR")), "jetbrains")
	if term != "vscode" && term != "sublime" && term != "Zed" && getenv("ZED_SESSION_ID") == "" &&
		getenv("XCODE_VERSION_ACTUAL") == "" && !jetbrains {
		return nil
	}
	info := ideFromEnv(getenv, jetbrains)
	if jetbrains {
		if info.Name == ideJetBrains.Name && ideCommand != "" {
			cmd := strings.ToLower(ideCommand)
			for _, b := range jetbrainsBrand {
				if strings.Contains(cmd, b.needle) {
					info = b.info
					break
				}
			}
		}
		return &info
	}
	if info.Name == ideVSCode.Name && ideCommand != "" && !strings.Contains(strings.ToLower(ideCommand), "code") {
		info = ideVSCodeFork
	}
	return &info
}

// ideFromEnv is the real client's environment sniffing, in its order
// (detectIdeFromEnv in gemini-cli 0.61.0
// packages/core/src/ide/detect-ide.ts).
func ideFromEnv(getenv func(string) string, jetbrains bool) ide.IDEInfo {
	switch {
	case getenv("ANTIGRAVITY_CLI_ALIAS") != "":
		return ide.IDEInfo{Name: "antigravity", DisplayName: "Antigravity"}
	case getenv("__COG_BASHRC_SOURCED") != "":
		return ide.IDEInfo{Name: "devin", DisplayName: "Devin"}
	case getenv("REPLIT_USER") != "":
		return ide.IDEInfo{Name: "replit", DisplayName: "Replit"}
	case getenv("CURSOR_TRACE_ID") != "":
		return ide.IDEInfo{Name: "cursor", DisplayName: "Cursor"}
	case getenv("CODESPACES") != "":
		return ide.IDEInfo{Name: "codespaces", DisplayName: "GitHub Codespaces"}
	case getenv("EDITOR_IN_CLOUD_SHELL") != "" || getenv("CLOUD_SHELL") != "":
		return ide.IDEInfo{Name: "cloudshell", DisplayName: "Cloud Shell"}
	case getenv("TERM_PRODUCT") == "Trae":
		return ide.IDEInfo{Name: "trae", DisplayName: "Trae"}
	case getenv("MONOSPACE_ENV") != "":
		return ide.IDEInfo{Name: "firebasestudio", DisplayName: "Firebase Studio"}
	case getenv("POSITRON") == "1":
		return ide.IDEInfo{Name: "positron", DisplayName: "Positron"}
	case getenv("TERM_PROGRAM") == "sublime":
		return ide.IDEInfo{Name: "sublimetext", DisplayName: "Sublime Text"}
	case getenv("ZED_SESSION_ID") != "" || getenv("TERM_PROGRAM") == "Zed":
		return ide.IDEInfo{Name: "zed", DisplayName: "Zed"}
	case getenv("XCODE_VERSION_ACTUAL") != "":
		return ide.IDEInfo{Name: "xcode", DisplayName: "XCode"}
	case jetbrains:
		return ideJetBrains
	}
	return ideVSCode
}
