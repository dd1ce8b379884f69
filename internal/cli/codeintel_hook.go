package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/proc"
)

// geminiHookInput is what Gemini CLI 0.61 writes on a command hook's
// standard input for AfterTool (gemini-cli 0.61.0
// packages/core/src/hooks/hookEventHandler.ts, fireAfterToolEvent and
// createBaseInput): the tool's name and input, and its response, whose
// returnDisplay is, for write_file and replace, a FileDiff with the file's
// path and its content before (packages/core/src/tools/write-file.ts and
// edit.ts, execute).
type geminiHookInput struct {
	HookEventName string                     `json:"hook_event_name"`
	Cwd           string                     `json:"cwd"`
	ToolName      string                     `json:"tool_name"`
	ToolInput     map[string]json.RawMessage `json:"tool_input"`
	ToolResponse  struct {
		Error         json.RawMessage `json:"error"`
		ReturnDisplay json.RawMessage `json:"returnDisplay"`
	} `json:"tool_response"`
}

// geminiFileDiff is write_file's and replace's returnDisplay.
type geminiFileDiff struct {
	FilePath        string  `json:"filePath"`
	OriginalContent *string `json:"originalContent"`
	IsNewFile       bool    `json:"isNewFile"`
}

// maxHookInput bounds what the hook reads: a file's content twice, and
// the tool's answer.
const maxHookInput = 64 << 20

func newCodeIntelHookCmd(a *app) *cobra.Command {
	var configPath string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Gemini CLI AfterTool hook: the diagnostics new after write_file and replace",
		Long: `A Gemini CLI hook command that adds to the result of write_file and replace
the errors and warnings the edit brought, in the file and in the files that
use it, as gemkit's language servers report them (nothing when there are none,
or when no server serves the file). Gemini CLI 0.61 appends a hook's
additionalContext to the tool's result for the model
(packages/core/src/core/coreToolHookTriggers.ts). In ~/.gemini/settings.json:

  "hooks": {
    "AfterTool": [
      {"matcher": "^(write_file|replace)$",
       "hooks": [{"type": "command", "command": "gemkit codeintel hook --timeout 25s", "timeout": 30000}]}
    ]
  }

It reads the hook's JSON on stdin and writes the hook's JSON answer on stdout.
It waits --timeout at most for the language server (a cold one indexing a large
workspace may need more): keep it under the hook's own timeout, after which
Gemini CLI drops the hook's answer. The language servers are the workspace's (the folder Gemini CLI runs in),
shared with gemkit mcp, and kept while Gemini CLI runs.`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := io.ReadAll(io.LimitReader(a.In, maxHookInput+1))
			if err != nil {
				return err
			}
			if len(data) > maxHookInput {
				return fmt.Errorf("the hook's input is larger than %d MiB", maxHookInput>>20)
			}
			var in geminiHookInput
			if err := json.Unmarshal(data, &in); err != nil {
				return fmt.Errorf("the hook's input is not Gemini CLI's hook JSON: %v", err)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout must be positive, such as 20s or 1m (got %s)", timeout)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			text := a.afterEditHook(ctx, in, configPath)
			if text == "" {
				return nil // nothing on stdout or stderr: Gemini CLI shows stderr as a message
			}
			return writeJSON(a.Out, map[string]any{"hookSpecificOutput": map[string]any{
				"hookEventName":     "AfterTool",
				"additionalContext": text,
			}})
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file (default: gemkit/config.json in your config folder)")
	cmd.Flags().DurationVar(&timeout, "timeout", codeintel.DefaultAfterEditTimeout, "how long to wait for the language server's diagnostics; keep it under the hook's timeout in Gemini CLI's settings")
	return cmd
}

// afterEditHook is the additional context for a write_file or replace
// that wrote a file: the diagnostics new after it, or "".
func (a *app) afterEditHook(ctx context.Context, in geminiHookInput, configPath string) string {
	if in.HookEventName != "AfterTool" || (in.ToolName != "write_file" && in.ToolName != "replace") {
		return ""
	}
	if e := strings.TrimSpace(string(in.ToolResponse.Error)); e != "" && e != "null" {
		return "" // the tool failed: nothing was written
	}
	var diff geminiFileDiff
	json.Unmarshal(in.ToolResponse.ReturnDisplay, &diff) // a string when replace created the file
	path := diff.FilePath
	if path == "" {
		json.Unmarshal(in.ToolInput["file_path"], &path)
	}
	if in.Cwd == "" || path == "" {
		return ""
	}
	ws, err := fsutil.Workspace(in.Cwd)
	if err != nil {
		a.log.Debug("code intelligence hook", "err", err)
		return ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(ws, path)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	var old *string
	if !diff.IsNewFile && diff.OriginalContent != nil {
		old = diff.OriginalContent
	}
	tools, err := a.codeIntelHeld(ws, configPath)
	if err != nil {
		a.log.Debug("code intelligence hook", "err", err)
		return ""
	}
	return tools.AfterEdit(ctx, path, old, nil)
}

// codeIntelHeld is codeIntel for a short-lived process working for the
// agent that runs it (the hook): the broker keeps its servers while that
// agent lives.
func (a *app) codeIntelHeld(ws, configPath string) (*codeintel.Tools, error) {
	a.intel.mu.Lock()
	a.intel.holdFor = proc.AgentOf(os.Getppid())
	a.intel.mu.Unlock()
	return a.codeIntel(ws, configPath)
}
