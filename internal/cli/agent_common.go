package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/ide/client"
	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/term"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// agentFlags are the flags `gemkit run` and `gemkit chat` share.
type agentFlags struct {
	cfg             model.Config
	configPath      string
	toolTimeout     time.Duration
	yes             bool
	noIDE           bool
	home, workspace string
	allowUnconfined bool
	budget          int
}

func (f *agentFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.cfg.Model, "model", "m", "", "model name (default: the config file's, else "+model.DefaultGeminiModel+")")
	fl.StringVar(&f.cfg.Provider, "provider", "", "gemini or openai (default: openai when --base-url is given, else gemini)")
	fl.StringVar(&f.cfg.BaseURL, "base-url", "", "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama")
	fl.StringVar(&f.cfg.APIKeyEnv, "api-key-env", "", "environment variable holding the OpenAI-compatible endpoint's key (default OPENAI_API_KEY)")
	fl.StringVar(&f.cfg.ToolProtocol, "tool-protocol", "", "native (function calling) or text (<tool_code> blocks, for models without function calling)")
	fl.IntVar(&f.cfg.MaxTurns, "max-turns", 0, fmt.Sprintf("most model turns per prompt (default %d)", agent.DefaultMaxTurns))
	fl.IntVar(&f.cfg.MaxOutputTokens, "max-output-tokens", 0, fmt.Sprintf("most tokens per model reply (default %d)", agent.DefaultMaxOutputTokens))
	fl.DurationVar(&f.toolTimeout, "tool-timeout", 0, fmt.Sprintf("kill an extension tool after this long (default %v)", agent.DefaultToolTimeout))
	fl.StringVar(&f.configPath, "config", "", "config file (default: gemkit/config.json in your config folder)")
	fl.BoolVarP(&f.yes, "yes", "y", false, "write the model's proposed edits without asking")
	fl.BoolVar(&f.noIDE, "no-ide", false, "do not look for an IDE companion")
	fl.StringVar(&f.home, "home", "", "extensions home (default: ~/.gemini)")
	fl.StringVar(&f.workspace, "workspace", "", "workspace folder (default: the current folder)")
	fl.BoolVar(&f.allowUnconfined, "allow-unconfined", false, "run tools even where the sandbox cannot enforce their permissions (DANGEROUS)")
	fl.IntVar(&f.budget, "summary-budget", 0, fmt.Sprintf("size of the extensions summary in characters (default %d)", disclosure.DefaultBudget))
}

// session is what an agent command sets up: the model, the extensions,
// the IDE connection and the agent.
type session struct {
	agent *agent.Agent
	ide   *client.Client
	// ideName is the editor's display name when connected.
	ideName string
}

func (s *session) close() {
	if s.ide != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.ide.Close(ctx) // closes pending diffs in the editor first
	}
}

// asker is how a command asks the person a yes/no question, nil when
// nobody can be asked.
type asker func(ctx context.Context, question string) (bool, error)

func setupSession(ctx context.Context, f *agentFlags, ap *app, ask asker) (*session, error) {
	s := ap.Streams
	path := f.configPath
	if path == "" {
		var err error
		if path, err = model.ConfigPath(); err != nil {
			return nil, err
		}
	}
	fileCfg, err := model.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	flagCfg := f.cfg
	if f.toolTimeout > 0 {
		flagCfg.ToolTimeout = f.toolTimeout.String()
	}
	cfg := fileCfg.Merge(flagCfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	toolTimeout := time.Duration(0)
	if cfg.ToolTimeout != "" {
		if toolTimeout, err = time.ParseDuration(cfg.ToolTimeout); err != nil {
			return nil, fmt.Errorf("tool timeout %q: %w", cfg.ToolTimeout, err)
		}
	}
	m, err := model.Open(ctx, cfg, ap.getenv)
	if err != nil {
		return nil, err
	}

	home := f.home
	if home == "" {
		if home, err = extension.DefaultHome(); err != nil {
			return nil, err
		}
	}
	st := extension.OpenStore(home)
	ws := f.workspace
	if ws == "" {
		ws = ap.cwd
	}
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--workspace %s is not a folder", ws)
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, err
	}
	st = st.WithWorkspace(ws)
	set, err := disclosure.Load(st)
	if err != nil {
		return nil, fmt.Errorf("load the extensions: %w", err)
	}
	runner := &toolrun.Runner{
		Launcher: &sandbox.Launcher{
			AllowUnconfined: f.allowUnconfined,
			OnDeny: func(d sandbox.Denial) {
				fmt.Fprintf(s.Err, "gemkit: sandbox: %s\n", extension.Printable(d.String()))
			},
		},
		Consent:   st,
		Protected: []string{filepath.Dir(st.Dir())},
	}
	if ask != nil {
		runner.Ask = func(ctx context.Context, name string, lines []string) (bool, error) {
			var b strings.Builder
			fmt.Fprintf(&b, "Extension %q wants to run a tool. Its tools may:\n", extension.Printable(name))
			for _, l := range lines {
				b.WriteString("  - " + extension.Printable(l) + "\n")
			}
			b.WriteString("Allow?")
			return ask(ctx, b.String())
		}
	}
	protocol := agent.Native
	if cfg.ToolProtocol == "text" {
		protocol = agent.Text
	}
	a := &agent.Agent{
		Model: m, Set: set, Runner: runner, Workspace: ws, Protocol: protocol,
		Limits:        agent.Limits{MaxTurns: cfg.MaxTurns, MaxOutputTokens: cfg.MaxOutputTokens, ToolTimeout: toolTimeout},
		SummaryBudget: f.budget,
	}
	sess := &session{agent: a}
	if !f.noIDE {
		sess.connectIDE(ctx, ap, ws)
	}
	switch {
	case f.yes:
		a.Reviewer = agent.YesReviewer{}
	case sess.ide != nil && sess.ide.DiffingEnabled():
		a.Reviewer = &agent.IDEReviewer{Client: sess.ide, Name: sess.ideName, Waiting: func(p agent.Proposal) {
			fmt.Fprintf(s.Err, "Waiting for your answer in %s: accept (you may change it first) or reject the diff of %s there…\n", sess.ideName, p.Rel)
		}}
	case ask != nil:
		a.Reviewer = &terminalReviewer{s: s, getenv: ap.getenv, ask: ask}
	default:
		a.Reviewer = agent.NoReviewer{}
	}
	return sess, nil
}

// connectIDE connects to the companion the real Gemini CLI would use from
// ws, if any; without one the agent simply has no IDE context.
func (s *session) connectIDE(ctx context.Context, ap *app, ws string) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	o := ap.clientOptions(clientFlags{})
	o.Cwd, o.ClientName, o.ClientVersion = ws, "gemkit-agent", buildVersion()
	c, plan, err := client.Connect(cctx, o)
	if err != nil {
		ap.log.Debug("no IDE companion", "err", err)
		return
	}
	s.ide = c
	s.ideName = "the IDE"
	if plan != nil && plan.IDE != nil && plan.IDE.DisplayName != "" {
		s.ideName = plan.IDE.DisplayName
	}
	// The first context arrives just after connecting.
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer wcancel()
	_, _ = c.WaitContext(wctx)
	s.agent.IDE = c
}

// terminalReviewer shows a proposed edit as a coloured diff and asks.
type terminalReviewer struct {
	s      Streams
	getenv func(string) string
	ask    asker
}

func (r *terminalReviewer) Review(ctx context.Context, p agent.Proposal) (agent.Decision, error) {
	diff := term.UnifiedDiff("a/"+p.Rel, "b/"+p.Rel, p.Old, p.New)
	if term.ColorEnabled(r.s.Err, r.getenv) {
		diff = term.Colorize(diff)
	}
	what := "Apply this change to " + p.Rel + "?"
	if p.IsNew {
		what = "Create " + p.Rel + "?"
	}
	fmt.Fprint(r.s.Err, diff)
	ok, err := r.ask(ctx, what)
	if err != nil {
		return agent.Decision{}, err
	}
	return agent.Decision{Accepted: ok, Content: p.New, Where: "the terminal"}, nil
}

// lineReader reads standard input one line at a time in one goroutine,
// so that the chat prompt and the questions asked during a turn share it
// and a cancelled read loses nothing.
type lineReader struct {
	lines chan string
	err   error
}

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string)}
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				lr.lines <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.EOF
				}
				lr.err = err
				close(lr.lines)
				return
			}
		}
	}()
	return lr
}

// read returns the next line, io.EOF at the end of input (Ctrl-D), or
// ctx's error.
func (lr *lineReader) read(ctx context.Context) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case line, ok := <-lr.lines:
		if !ok {
			return "", lr.err
		}
		return line, nil
	}
}

// askYesNo asks question on w and reads y/N from lr.
func askYesNo(w io.Writer, lr *lineReader) asker {
	return func(ctx context.Context, question string) (bool, error) {
		fmt.Fprint(w, question+" [y/N]: ")
		line, err := lr.read(ctx)
		if err != nil {
			fmt.Fprintln(w)
			return false, err
		}
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	}
}

// toolLine is the one line shown for a tool call's outcome.
func toolLine(e agent.Event) string {
	status := "ok"
	if e.IsError {
		status = "failed: " + oneLine(e.Text, 160)
	} else if e.Text != "" {
		status = "ok: " + oneLine(e.Text, 100)
	}
	name := e.Name
	if name == "" {
		name = "(unreadable block)"
	}
	return fmt.Sprintf("  ⚙ %s → %s (%s)", name, status, e.Elapsed.Round(time.Millisecond))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return extension.Printable(s)
}

func argsLine(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	return oneLine(string(args), 120)
}
