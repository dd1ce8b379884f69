package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// session is what an agent command sets up: the model, the extensions,
// the IDE connection and the agent.
type session struct {
	agent *agent.Agent
	ide   *client.Client
	// ideName is the editor's display name when connected.
	ideName string
	// text shows the model's words.
	text *turnText
}

// turnText writes the model's text, starting a new line where a model
// turn follows another's text that did not end one (a tool call or a
// retry came between them), so that successive turns are not run
// together on one line. On a terminal (escape) the text is shown with its
// control characters escaped (modelText), as a tool's output is.
type turnText struct {
	w       io.Writer
	escape  bool
	esc     modelText
	mu      sync.Mutex
	open    bool // the last text written did not end its line
	newTurn bool
}

func (t *turnText) write(s string) {
	if s == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.escape {
		if s = t.esc.escape(s); s == "" {
			return
		}
	}
	if t.newTurn && t.open {
		io.WriteString(t.w, "\n")
	}
	t.newTurn = false
	io.WriteString(t.w, s)
	t.open = !strings.HasSuffix(s, "\n")
}

// modelText escapes a model's streamed text for a terminal: a model that
// repeats what a tool printed (or what a web page said) must not reach
// the terminal's commands: set the clipboard (OSC 52), change the title,
// move the cursor or erase lines to fake what the person sees. Newlines
// and tabs stay (and "\r\n" is a newline); every other control
// character, bidirectional override and invalid byte is shown escaped
// (extension.PrintableText). A piece may end inside a character or
// between "\r" and "\n": that end is held back for the next piece.
type modelText struct{ held string }

func (m *modelText) escape(s string) string {
	s = m.held + s
	m.held = ""
	// Hold back an incomplete UTF-8 sequence at the end (at most three
	// bytes), and a carriage return that may start "\r\n".
	cut := len(s)
	for i := len(s) - 1; i >= 0 && i >= len(s)-3; i-- {
		if c := s[i]; c&0xc0 != 0x80 {
			if c >= 0xc0 && !utf8.FullRuneInString(s[i:]) {
				cut = i
			}
			break
		}
	}
	if cut == len(s) && strings.HasSuffix(s, "\r") {
		cut--
	}
	s, m.held = s[:cut], s[cut:]
	return extension.PrintableText(strings.ReplaceAll(s, "\r\n", "\n"))
}

// flush escapes what was held back, at the end of a reply.
func (m *modelText) flush() string {
	s := m.held
	m.held = ""
	return extension.PrintableText(s)
}

// turn marks the end of a model turn's text.
func (t *turnText) turn() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newTurn = true
}

// end ends the line the text left open, once the person's prompt is done.
func (t *turnText) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rest := t.esc.flush(); rest != "" {
		io.WriteString(t.w, rest)
		t.open = true
	}
	if t.open {
		io.WriteString(t.w, "\n")
	}
	t.open, t.newTurn = false, false
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

func setupSession(ctx context.Context, f *agentFlags, ap *app, lines *term.Lines) (*session, error) {
	var ask asker
	if lines != nil {
		ask = askYesNo(lines)
	}
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
		return nil, err
	}
	toolTimeout := time.Duration(0)
	if cfg.ToolTimeout != "" {
		if toolTimeout, err = time.ParseDuration(cfg.ToolTimeout); err != nil {
			return nil, fmt.Errorf("tool timeout %q: %w", cfg.ToolTimeout, err)
		}
	}
	// A wrong --home is the person's mistake to fix first, before the
	// model's credentials are looked for.
	home, err := resolveHome(f.home)
	if err != nil {
		return nil, err
	}
	m, err := model.Open(ctx, cfg, ap.getenv)
	if err != nil {
		return nil, err
	}
	retry, err := cfg.Retry()
	if err != nil {
		return nil, err
	}
	text := &turnText{w: s.Out, escape: isTerminalWriter(s.Out)}
	retry.OnWait = func(w model.Wait) {
		text.turn()
		fmt.Fprintln(s.Err, waitLine(w))
	}
	m = model.WithRetry(m, retry)

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
	var askTool toolrun.Asker
	if ask != nil {
		askTool = func(ctx context.Context, q toolrun.ConsentRequest) (bool, error) {
			return ask(ctx, consentQuestion(q)+"Allow?")
		}
	}
	protocol := agent.Native
	if cfg.ToolProtocol == "text" {
		protocol = agent.Text
	}
	a := &agent.Agent{
		Model: m, Set: set, Runner: runner, Workspace: ws, Protocol: protocol,
		Home: ap.getenv("HOME"), AllowProtected: f.allowProtected,
		Limits:        agent.Limits{MaxTurns: cfg.MaxTurns, MaxOutputTokens: cfg.MaxOutputTokens, ToolTimeout: toolTimeout},
		SummaryBudget: f.budget,
	}
	if !f.noCodeIntel {
		// Language servers start at the model's first code question (or
		// its first edit), not here.
		tools, err := ap.codeIntel(ws, f.configPath)
		if err != nil {
			fmt.Fprintf(s.Err, "gemkit: code intelligence is off: %v\n", err)
		} else {
			a.CodeIntel = tools
		}
	}
	sess := &session{agent: a, text: text}
	if !f.noIDE {
		sess.connectIDE(ctx, ap, ws)
	}
	switch {
	case f.yes:
		a.Reviewer = agent.YesReviewer{}
	case sess.ide != nil && sess.ide.DiffingEnabled():
		ide := &agent.IDEReviewer{Client: sess.ide, Name: sess.ideName, Waiting: func(p agent.Proposal) {
			fmt.Fprintf(s.Err, "Waiting for your answer in %s: accept (you may change it first) or reject the diff of %s there…\n", sess.ideName, p.Rel)
		}}
		if lines != nil {
			ide.ConfirmProtected = func(ctx context.Context, p agent.Proposal) (bool, error) {
				return confirmProtected(ctx, lines, s.Err, p, "show its diff in "+sess.ideName)
			}
		}
		a.Reviewer = ide
	case ask != nil:
		a.Reviewer = &terminalReviewer{s: s, getenv: ap.getenv, lines: lines}
	default:
		a.Reviewer = agent.NoReviewer{}
	}
	a.Host = agent.LocalHost{Reviewer: a.Reviewer, Ask: askTool}
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
		if plan == nil || len(plan.Endpoints) == 0 {
			ap.log.Debug("no IDE companion", "err", err)
			return
		}
		// A companion is there but does not connect: say why (in a
		// container, most often a shell without the export line), since
		// the edits would otherwise be reviewed here without a word.
		why := err.Error()
		var ce *client.ConnectError
		if errors.As(err, &ce) && len(ce.Attempts) > 0 {
			// The attempts name the cause; the CLI's own message does not.
			why = ""
			for i, at := range ce.Attempts {
				if i > 0 {
					why += "; "
				}
				why += fmt.Sprintf("%s: %v", at.Endpoint, at.Err)
			}
		}
		fmt.Fprintf(ap.Err, "gemkit: an IDE companion serves %s but does not connect, so the model gets no editor context and edits are reviewed here (gemkit ide doctor says more): %s\n", ws, why)
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

// terminalReviewer shows a proposed edit as a coloured diff and asks for
// one key, as the terminal front-end of ide serve does: a accepts, r
// rejects, e edits the proposal in $VISUAL/$EDITOR first.
type terminalReviewer struct {
	s      Streams
	getenv func(string) string
	lines  *term.Lines
}

// ReviewsProtected implements agent.ProtectedReviewer: a protected file
// is written only once the person types its name.
func (r *terminalReviewer) ReviewsProtected() bool { return true }

func (r *terminalReviewer) Review(ctx context.Context, p agent.Proposal) (agent.Decision, error) {
	content, edited := p.New, false
	for {
		newLabel := "b/" + p.Rel
		if edited {
			newLabel += " (edited)"
		}
		// The proposal is the model's text: escaped before the colours.
		diff := extension.PrintableText(term.UnifiedDiff("a/"+p.Rel, newLabel, p.Old, content))
		if term.ColorEnabled(r.s.Err, r.getenv) {
			diff = term.Colorize(diff)
		}
		what := "Apply this change to " + p.Rel
		if p.IsNew {
			what = "Create " + p.Rel
		}
		if p.Protected != "" {
			what += " (a protected file)"
		}
		fmt.Fprint(r.s.Err, diff)
		key, err := r.lines.ReadKey(ctx, what+": accept [a], reject [r], or edit [e]? ")
		if err != nil {
			return agent.Decision{}, err
		}
		switch strings.ToLower(key) {
		case "a", "y", "yes", "accept":
			if p.Protected != "" {
				ok, err := confirmProtected(ctx, r.lines, r.s.Err, p, "write it")
				if err != nil {
					return agent.Decision{}, err
				}
				if !ok {
					return agent.Decision{Accepted: false, Content: content, Where: "the terminal"}, nil
				}
			}
			return agent.Decision{Accepted: true, Content: content, Where: "the terminal"}, nil
		case "r", "n", "no", "reject":
			return agent.Decision{Accepted: false, Content: content, Where: "the terminal"}, nil
		case "e", "edit":
			out, err := term.Edit(ctx, term.EditOptions{Editor: term.EditorCommand(r.getenv), In: r.s.In, Out: r.s.Err}, p.Rel, content)
			if err != nil {
				fmt.Fprintf(r.s.Err, "Editing failed: %v. The proposal is unchanged.\n", err)
			} else if out != content {
				content, edited = out, true
			}
		default:
			fmt.Fprintln(r.s.Err, "Please answer a (accept), r (reject) or e (edit).")
		}
	}
}

// confirmProtected has the person allow the protected file of p by typing
// its name, after saying why it is protected; any other answer is no.
// what is what the answer lets gemkit do ("write it").
func confirmProtected(ctx context.Context, lines *term.Lines, w io.Writer, p agent.Proposal, what string) (bool, error) {
	fmt.Fprintf(w, "gemkit: %s.\n", extension.Printable(p.Protected))
	line, err := lines.ReadLine(ctx, fmt.Sprintf("To %s, type its name (%s); anything else rejects the edit: ", what, extension.Printable(p.Rel)))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(line) == p.Rel, nil
}

// askYesNo asks question on the person's terminal and reads y/N.
func askYesNo(lines *term.Lines) asker {
	return func(ctx context.Context, question string) (bool, error) {
		line, err := lines.ReadLine(ctx, question+" [y/N]: ")
		if err != nil {
			return false, err
		}
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	}
}

// waitLine is the one line shown on stderr before a retry's wait.
func waitLine(w model.Wait) string {
	err := w.Err
	var me *model.Error
	if errors.As(err, &me) {
		short := *me
		short.Hint = "" // what to do is to wait, which gemkit does
		err = &short
	}
	why := strings.TrimRight(oneLine(err.Error(), 240), ". ")
	if w.Discarded {
		why = "the reply above is discarded: " + why
	}
	return fmt.Sprintf("gemkit: %s; retrying in %s (attempt %d of %d; Ctrl-C stops)", why, roundWait(w.Delay), w.Attempt+1, w.MaxAttempts)
}

// roundWait shows a wait to the tenth of a second under 10 s, else to the
// second.
func roundWait(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// toolLine is the one line shown for a tool call's outcome.
func toolLine(e agent.Event) string {
	status := "ok"
	if e.IsError {
		status = "failed: " + oneLine(e.Text, 160)
	} else if e.Text != "" {
		status = "ok: " + oneLine(e.Text, 100)
	}
	name := extension.Printable(e.Name)
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
