package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/config"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// agentFlags are the flags `gemkit run` and `gemkit chat` share.
type agentFlags struct {
	cfg             model.Config
	configPath      string
	toolTimeout     time.Duration
	retryDelay      time.Duration
	retryMaxWait    time.Duration
	yes             bool
	noIDE           bool
	home, workspace string
	allowUnconfined bool
	budget          int
	noCodeIntel     bool
	allowProtected  []string
}

func (f *agentFlags) register(cmd *cobra.Command) {
	f.registerModel(cmd)
	fl := cmd.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "write the model's proposed edits without asking (never a protected file: see --allow-protected)")
	fl.StringArrayVar(&f.allowProtected, "allow-protected", nil, "let edits of this protected file (a git hook or config, .env, .vscode/…, GEMINI.md …; docs/sandbox.md lists them) be reviewed and written as any other, --yes included; repeat for each file")
	fl.BoolVar(&f.noIDE, "no-ide", false, "do not look for an IDE companion")
	fl.StringVar(&f.workspace, "workspace", "", "workspace folder (default: the current folder)")
}

// registerModel registers the flags of the model, the extensions and the
// limits, which `gemkit acp` shares with run and chat.
func (f *agentFlags) registerModel(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.cfg.Model, "model", "m", "", "model name (default: the config file's, else "+model.DefaultGeminiModel+")")
	fl.StringVar(&f.cfg.Provider, "provider", "", "gemini or openai (default: openai when --base-url is given, else gemini)")
	fl.StringVar(&f.cfg.BaseURL, "base-url", "", "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama")
	fl.StringVar(&f.cfg.APIKeyEnv, "api-key-env", "", "environment variable holding the OpenAI-compatible endpoint's key (default OPENAI_API_KEY)")
	fl.StringVar(&f.cfg.ToolProtocol, "tool-protocol", "", "native (function calling) or text (<tool_code> blocks, for models without function calling)")
	fl.IntVar(&f.cfg.MaxTurns, "max-turns", 0, fmt.Sprintf("most model turns per prompt (default %d)", agent.DefaultMaxTurns))
	fl.IntVar(&f.cfg.MaxOutputTokens, "max-output-tokens", 0, fmt.Sprintf("most tokens per model reply (default %d)", agent.DefaultMaxOutputTokens))
	fl.IntVar(&f.cfg.MaxAttempts, "max-attempts", 0, fmt.Sprintf("most times one model request is sent while it is refused (429, 5xx) or cannot connect, counted anew after a stream that broke off (retried up to %d times); 1 turns retries off (default %d)", model.DefaultMidStreamAttempts-1, model.DefaultMaxAttempts))
	fl.DurationVar(&f.retryDelay, "retry-delay", 0, fmt.Sprintf("first wait before retrying a model request, doubling up to %v (default %v)", model.DefaultMaxDelay, model.DefaultInitialDelay))
	fl.DurationVar(&f.retryMaxWait, "retry-max-wait", 0, fmt.Sprintf("most time spent waiting to retry one model request (default %v)", model.DefaultMaxWait))
	fl.DurationVar(&f.toolTimeout, "tool-timeout", 0, fmt.Sprintf("kill an extension tool after this long (default %v)", agent.DefaultToolTimeout))
	fl.StringVar(&f.configPath, "config", "", "config file (default: gemkit/config.json in your config folder)")
	fl.StringVar(&f.home, "home", "", homeFlagUsage)
	fl.BoolVar(&f.allowUnconfined, "allow-unconfined", false, "run tools even where the sandbox cannot enforce their permissions (DANGEROUS)")
	fl.BoolVar(&f.noCodeIntel, "no-code-intel", false, "do not offer the code-intelligence tools (code_definition, code_references, ...) or report an edit's new diagnostics")
	fl.IntVar(&f.budget, "summary-budget", 0, fmt.Sprintf("size of the extensions summary in characters (default %d)", disclosure.DefaultBudget))
}

// agentBase is what run, chat and acp set up alike before their agent:
// the model with its retries, the workspace and its extensions.
type agentBase struct {
	model       model.Model
	cfg         model.Config
	toolTimeout time.Duration
	ws          string
	st          *extension.Store
	set         *disclosure.Set
}

// setup opens the model (its retries' waits reported to onWait) and the
// extensions enabled in the workspace.
func (f *agentFlags) setup(ctx context.Context, ap *app, onWait func(model.Wait)) (*agentBase, error) {
	cfg, toolTimeout, err := f.modelConfig()
	if err != nil {
		return nil, err
	}
	// A wrong --home is the person's mistake to fix first, before the
	// model's credentials are looked for.
	home, err := resolveHome(f.home)
	if err != nil {
		return nil, err
	}
	m, err := model.Open(ctx, cfg, ap.modelGetenv())
	if err != nil {
		return nil, err
	}
	retry, err := cfg.Retry()
	if err != nil {
		return nil, err
	}
	retry.OnWait = onWait
	b := &agentBase{model: model.WithRetry(m, retry), cfg: cfg, toolTimeout: toolTimeout}
	if b.ws, err = ap.resolveWorkspace(f.workspace); err != nil {
		return nil, err
	}
	b.st = extension.OpenStore(home).WithWorkspace(b.ws)
	if b.set, err = disclosure.Load(b.st); err != nil {
		return nil, fmt.Errorf("load the extensions: %w", err)
	}
	return b, nil
}

// modelConfig is the config file's model settings with the flags'
// over them, checked, and the tool timeout they give.
func (f *agentFlags) modelConfig() (model.Config, time.Duration, error) {
	path, err := config.Path(f.configPath)
	if err != nil {
		return model.Config{}, 0, err
	}
	fileCfg, err := model.LoadConfig(path)
	if err != nil {
		return model.Config{}, 0, fmt.Errorf("config file: %w", err)
	}
	flagCfg := f.cfg
	if f.toolTimeout > 0 {
		flagCfg.ToolTimeout = f.toolTimeout.String()
	}
	// Zero is the default; anything else, negative too, goes to the
	// config's checks, which refuse it in words.
	if f.retryDelay != 0 {
		flagCfg.RetryDelay = f.retryDelay.String()
	}
	if f.retryMaxWait != 0 {
		flagCfg.RetryMaxWait = f.retryMaxWait.String()
	}
	cfg := fileCfg.Merge(flagCfg)
	if err := cfg.Validate(); err != nil {
		return model.Config{}, 0, err
	}
	var toolTimeout time.Duration
	if cfg.ToolTimeout != "" {
		if toolTimeout, err = time.ParseDuration(cfg.ToolTimeout); err != nil {
			return model.Config{}, 0, fmt.Errorf("tool timeout %q: %w", cfg.ToolTimeout, err)
		}
	}
	return cfg, toolTimeout, nil
}

// agent builds the agent of b with host as its Host, and a runner whose
// tools ask through ask (nil: nobody can be asked).
func (b *agentBase) agent(f *agentFlags, ap *app, host agent.Host, ask toolrun.Asker) *agent.Agent {
	protocol := agent.Native
	if b.cfg.ToolProtocol == "text" {
		protocol = agent.Text
	}
	a := &agent.Agent{
		Model: b.model, Set: b.set, Workspace: b.ws, Protocol: protocol, Host: host,
		Runner:         newRunner(b.st, stderrLauncher(ap.Err, f.allowUnconfined), ask, nil),
		Home:           ap.getenv("HOME"),
		AllowProtected: f.allowProtected,
		Limits:         agent.Limits{MaxTurns: b.cfg.MaxTurns, MaxOutputTokens: b.cfg.MaxOutputTokens, ToolTimeout: b.toolTimeout},
		SummaryBudget:  f.budget,
	}
	if !f.noCodeIntel {
		// Language servers start at the model's first code question (or
		// its first edit), not here.
		tools, err := ap.codeIntel(b.ws, f.configPath)
		if err != nil {
			fmt.Fprintf(ap.Err, "gemkit: code intelligence is off: %v\n", err)
		} else {
			a.CodeIntel = tools
		}
	}
	return a
}
