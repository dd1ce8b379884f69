// Package agent is gemkit's agent loop: it sends a prompt to a model with
// the progressive-disclosure summary of the enabled extensions and the
// IDE's context, runs the tools the model asks for (extension tools in
// the sandbox, read_doc, reading and listing workspace files, proposing
// edits the person reviews), sends the results back, and repeats until
// the model answers without a tool call or a limit is reached.
//
// Tools are called natively (function calling) or through the extension
// plan's text protocol (<tool_code>, <read_doc>) for models without
// function calling. The loop is the same for `gemkit run`, `gemkit chat`
// and `gemkit acp`: one Agent holds one conversation, and what it asks of
// the person goes through its Host.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// Protocol is how tools are offered to the model.
type Protocol string

const (
	Native Protocol = "native"
	Text   Protocol = "text"
)

// Default limits.
const (
	DefaultMaxTurns        = 25
	DefaultMaxOutputTokens = 8192
	DefaultToolTimeout     = toolrun.DefaultTimeout
)

// MaxCallsPerTurn is the most tool calls run from one reply; the others
// are answered with an error, so that one reply cannot start an unbounded
// amount of work.
const MaxCallsPerTurn = 32

const tooMany = "not run: at most 32 tool calls are run from one reply; call it again in the next one"

// Limits bound one Run.
type Limits struct {
	// MaxTurns is how many model requests one prompt may take.
	MaxTurns int
	// MaxOutputTokens bounds each reply.
	MaxOutputTokens int
	// ToolTimeout bounds each extension tool call.
	ToolTimeout time.Duration
}

// Status is how a Run ended.
type Status string

const (
	// Done: the model answered without asking for a tool.
	Done Status = "done"
	// MaxTurns: the model still wanted tools after Limits.MaxTurns turns.
	MaxTurns Status = "max_turns"
	// MaxTokens: a reply was cut at Limits.MaxOutputTokens.
	MaxTokens Status = "max_tokens"
	// Cancelled: the context ended (Ctrl-C).
	Cancelled Status = "cancelled"
	// Failed: the model's API failed (see Outcome.Err).
	Failed Status = "error"
)

// Outcome is how one Run ended.
type Outcome struct {
	Status Status `json:"status"`
	// Text is the model's last reply.
	Text string `json:"text,omitempty"`
	// Turns is how many model requests the Run made.
	Turns int   `json:"turns"`
	Err   error `json:"-"`
}

// EventType names what an Event reports.
type EventType string

const (
	EventToolCall    EventType = "tool_call"
	EventToolResult  EventType = "tool_result"
	EventEdit        EventType = "edit"
	EventEditOutcome EventType = "edit_outcome"
	// EventNotice is something the person should know (a protocol switch,
	// a limit).
	EventNotice EventType = "notice"
)

// Event is something the agent did, for a front-end to show.
type Event struct {
	Type EventType `json:"type"`
	Name string    `json:"name,omitempty"`
	// Args are a tool call's arguments.
	Args json.RawMessage `json:"args,omitempty"`
	// Text is a result's text, a diff, or a notice.
	Text    string        `json:"text,omitempty"`
	IsError bool          `json:"isError,omitempty"`
	Elapsed time.Duration `json:"elapsedNs,omitempty"`
}

// Agent is one conversation with a model.
type Agent struct {
	Model model.Model
	// Set is the enabled extensions (nil: none).
	Set *disclosure.Set
	// Runner runs extension tools (sandbox, consent). Whoever builds
	// the agent builds it, with the Asker of the same front-end as Host
	// (the terminal's question, an ACP client's permission request).
	Runner *toolrun.Runner
	// Workspace is the folder files are read from and edited in.
	Workspace string
	// Home is the person's home folder, for the protected paths (empty:
	// os.UserHomeDir); AllowProtected are the protected files the person
	// allowed edits of by naming them (--allow-protected).
	Home           string
	AllowProtected []string
	// AllowFlag names how the person allows the edit of the protected
	// file rel where the reviewer cannot ask about it ("--allow-protected
	// rel" for run and chat), for the refusal the model and the person
	// read; nil names nothing.
	AllowFlag func(rel string) string
	// IDE gives the editor's context; nil when no companion is connected.
	IDE ContextSource
	// Host reads files as the person sees them, reviews and writes edits;
	// nil is LocalHost{NoReviewer{}}: nobody reviews, nothing is written.
	Host Host
	// Tools are more tools offered beside the built-in and extension ones
	// (an ACP client's MCP servers).
	Tools []ToolSource
	// CodeIntel, when set, offers the code-intelligence tools
	// (code_definition, …) and adds to an accepted edit's result the
	// problems the language servers report new after it.
	CodeIntel *codeintel.Tools
	// OnCodeStart, when set, is told when an accepted edit's check starts
	// the file's language server, which the edit's result then waits for
	// (seconds, for gopls); the func it returns is called when the check
	// is over. The command shows it to the person; the model is not told.
	OnCodeStart codeintel.Starting
	Protocol    Protocol
	Limits      Limits
	// SummaryBudget is the summary's size (0: disclosure.DefaultBudget).
	SummaryBudget int
	// OnText receives the model's text as it streams; may be nil.
	OnText func(string)
	// OnEvent receives tool calls, results and notices; may be nil.
	OnEvent func(Event)

	history []model.Message
	ide     ideTracker
	system  string
	decls   []model.ToolDecl
	ready   bool
}

// History is the conversation so far.
func (a *Agent) History() []model.Message { return a.history }

// SetHistory makes h the conversation so far, before the next Run: a
// stored conversation resumed (gemkit acp's session/load), or one carried
// over to an agent of another model.
func (a *Agent) SetHistory(h []model.Message) { a.history = append([]model.Message(nil), h...) }

// System is the system prompt (built on the first Run).
func (a *Agent) System() string { a.prepare(); return a.system }

// host is the Host, or with none one where nobody reviews and the agent
// reads the disk.
func (a *Agent) host() Host {
	if a.Host == nil {
		return LocalHost{Reviewer: NoReviewer{}}
	}
	return a.Host
}

func (a *Agent) emit(e Event) {
	if a.OnEvent != nil {
		a.OnEvent(e)
	}
}

func (a *Agent) prepare() {
	if a.ready {
		return
	}
	a.ready = true
	if a.Protocol == "" {
		a.Protocol = Native
	}
	a.ide.src = a.IDE
	a.decls = builtinDecls()
	if a.Set != nil {
		a.decls = append(a.decls, readDocDecl())
		for _, t := range a.Set.Tools() {
			if isBuiltin(t.Name) {
				continue
			}
			a.decls = append(a.decls, model.ToolDecl{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
		}
	}
	taken := map[string]bool{}
	for _, d := range a.decls {
		taken[d.Name] = true
	}
	if a.CodeIntel != nil {
		a.Tools = append([]ToolSource{codeIntelTools{a.CodeIntel}}, a.Tools...)
	}
	for _, src := range a.Tools {
		for _, d := range src.Decls() {
			if !taken[d.Name] {
				taken[d.Name] = true
				a.decls = append(a.decls, d)
			}
		}
	}
	a.system = a.buildSystem()
}

func isBuiltin(name string) bool {
	switch name {
	case readFileTool, listFilesTool, proposeEditTool, readDocTool:
		return true
	}
	return false
}

const basePrompt = `You are gemkit's agent, working in the workspace folder %s with the person who started you.
Use the tools to read and list files in the workspace and to call the extensions' tools. To change a file, use propose_edit: the person reviews each change and may accept, change or reject it; never claim a change was made unless you were told it was written.
Be concise. When the task is done, answer without calling a tool.`

func (a *Agent) buildSystem() string {
	var b strings.Builder
	fmt.Fprintf(&b, basePrompt, a.Workspace)
	if a.CodeIntel != nil {
		b.WriteString("\n\n" + codeintel.Instructions)
	}
	if a.Set != nil && len(a.Set.Extensions) > 0 {
		b.WriteString("\n\n")
		b.WriteString(a.Set.Summary(a.SummaryBudget).Text)
	}
	if a.Protocol == Text {
		a.appendTextTools(&b)
	}
	return b.String()
}

// appendTextTools lists every tool with its schema, for a model that gets
// no function declarations, and says how to call them.
func (a *Agent) appendTextTools(b *strings.Builder) {
	b.WriteString("\n\nTools (arguments as JSON Schema):\n")
	for _, d := range a.decls {
		schema, _ := json.Marshal(d.Schema)
		fmt.Fprintf(b, "- %s: %s\n  args: %s\n", d.Name, d.Description, schema)
	}
	b.WriteString("\n")
	b.WriteString(textInstructions)
}

// Run sends prompt as the person's next message and runs the loop until
// the model is done, a limit is reached, the API fails or ctx ends. The
// conversation stays valid after any outcome, so a chat can go on.
func (a *Agent) Run(ctx context.Context, prompt string) Outcome {
	a.prepare()
	lim := a.limits()
	if c := a.ide.next(); c != "" {
		a.history = append(a.history, model.Message{Role: model.User, Text: c})
	}
	a.history = append(a.history, model.Message{Role: model.User, Text: prompt})
	var out Outcome
	for {
		if err := ctx.Err(); err != nil {
			out.Status, out.Err = Cancelled, err
			return out
		}
		if out.Turns >= lim.MaxTurns {
			out.Status = MaxTurns
			out.Err = fmt.Errorf("stopped after %d model turns with the task unfinished", lim.MaxTurns)
			return out
		}
		out.Turns++
		reply, err := a.generate(ctx, lim, out.Turns)
		if errors.Is(err, errSwitched) {
			out.Turns--
			continue
		}
		if err != nil {
			out.Status, out.Err = Failed, err
			if ctx.Err() != nil {
				out.Status, out.Err = Cancelled, ctx.Err()
			}
			return out
		}
		out.Text = reply.Text
		if reply.Finish == model.FinishMaxTokens {
			a.history = append(a.history, model.Message{Role: model.Assistant, Text: reply.Text})
			out.Status = MaxTokens
			out.Err = fmt.Errorf("the model's reply was cut at the output limit of %d tokens", lim.MaxOutputTokens)
			return out
		}
		run := a.runText
		if a.Protocol == Native {
			run = a.runNative
		}
		if !run(ctx, lim, reply) {
			out.Status = Done
			return out
		}
	}
}

// limits are a.Limits with the defaults filled in.
func (a *Agent) limits() Limits {
	lim := a.Limits
	if lim.MaxTurns <= 0 {
		lim.MaxTurns = DefaultMaxTurns
	}
	if lim.MaxOutputTokens <= 0 {
		lim.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if lim.ToolTimeout <= 0 {
		lim.ToolTimeout = DefaultToolTimeout
	}
	return lim
}

// errSwitched is a request the model refused for want of function
// calling, after which the agent switched to the text protocol: the
// turn is asked again.
var errSwitched = errors.New("switched to the text protocol")

// generate asks the model for the reply of turn (counted from 1).
func (a *Agent) generate(ctx context.Context, lim Limits, turn int) (model.Reply, error) {
	req := model.Request{System: a.system, Messages: a.history, MaxOutputTokens: lim.MaxOutputTokens, AfterResults: turn > 1 && a.Protocol == Text}
	if a.Protocol == Native {
		req.Tools = a.decls
	}
	reply, err := a.Model.Generate(ctx, req, a.OnText)
	if err != nil && model.IsKind(err, model.KindNoTools) && a.Protocol == Native {
		a.Protocol = Text
		a.system = a.buildSystem()
		a.emit(Event{Type: EventNotice, Text: "the model has no function calling; switching to the text protocol"})
		return reply, errSwitched
	}
	return reply, err
}

// runNative runs the function calls of a native reply and adds their
// results to the history; false when the reply called none.
func (a *Agent) runNative(ctx context.Context, lim Limits, reply model.Reply) bool {
	a.history = append(a.history, model.Message{Role: model.Assistant, Text: reply.Text, Calls: reply.Calls})
	if len(reply.Calls) == 0 {
		return false
	}
	results := make([]model.Result, 0, len(reply.Calls))
	for i, c := range reply.Calls {
		r := model.Result{CallID: c.ID, Name: c.Name, IsError: true}
		switch {
		case i >= MaxCallsPerTurn:
			r.Text = tooMany
		case ctx.Err() != nil:
			r.Text = "cancelled by the person"
		default:
			r.Text, r.IsError = a.call(ctx, lim, c.Name, c.Args)
		}
		results = append(results, r)
	}
	a.history = append(a.history, model.Message{Role: model.Tool, Results: results})
	return true
}

// runText runs the blocks of a text-protocol reply and adds their
// results to the history as the person's next message; false when the
// reply had none.
func (a *Agent) runText(ctx context.Context, lim Limits, reply model.Reply) bool {
	a.history = append(a.history, model.Message{Role: model.Assistant, Text: reply.Text})
	blocks := parseText(reply.Text)
	if len(blocks) == 0 {
		return false
	}
	var results []textResult
	for i, blk := range blocks {
		r := textResult{Name: blk.Name, IsError: true}
		switch {
		case i >= MaxCallsPerTurn:
			r.Text = tooMany
		case blk.Problem != "":
			a.emit(Event{Type: EventToolResult, Name: blk.Name, Text: blk.Problem, IsError: true})
			r.Text = "Could not read this block: " + blk.Problem + ".\nThe block was: " + blk.Raw
		case ctx.Err() != nil:
			r.Text = "cancelled by the person"
		default:
			r.Text, r.IsError = a.call(ctx, lim, blk.Name, blk.Args)
		}
		results = append(results, r)
	}
	a.history = append(a.history, model.Message{Role: model.User, Text: formatTextResults(results)})
	return true
}

// call runs one tool and returns what the model reads. It never fails:
// errors are words for the model.
func (a *Agent) call(ctx context.Context, lim Limits, name string, args json.RawMessage) (string, bool) {
	start := time.Now()
	resolved, rerr := a.resolve(name)
	if rerr == nil {
		name = resolved
	}
	a.emit(Event{Type: EventToolCall, Name: name, Args: args})
	var text string
	var err error
	if rerr != nil {
		err = rerr
	} else if obj := strings.TrimSpace(string(args)); obj != "" && obj != "null" && !strings.HasPrefix(obj, "{") {
		err = fmt.Errorf("the arguments of %s must be a JSON object, got %s", name, cut(obj, 200))
	} else {
		text, err = a.dispatch(ctx, lim, name, args)
	}
	isErr := err != nil
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			text = "cancelled by the person"
		} else {
			text = err.Error()
		}
	}
	a.emit(Event{Type: EventToolResult, Name: name, Text: text, IsError: isErr, Elapsed: time.Since(start)})
	return text, isErr
}

// errResult carries a tool's own failure text.
type errResult struct{ text string }

func (e errResult) Error() string { return e.text }

func (a *Agent) dispatch(ctx context.Context, lim Limits, name string, args json.RawMessage) (string, error) {
	switch name {
	case readFileTool:
		return a.readFile(ctx, args)
	case listFilesTool:
		return a.listFiles(args)
	case proposeEditTool:
		return a.proposeEdit(ctx, args)
	}
	if src := a.toolSource(name); src != nil {
		text, isErr, err := src.Call(ctx, name, args)
		if err == nil && isErr {
			err = errResult{text}
		}
		return text, err
	}
	if a.Set == nil {
		return "", fmt.Errorf("there is no tool %q; the tools are %s", name, a.toolNames())
	}
	res := a.Set.Call(ctx, a.Runner, name, args, disclosure.Limits{Timeout: lim.ToolTimeout})
	if res.IsError {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", errResult{res.Text}
	}
	return res.Text, nil
}

// resolve returns the declared name of the tool a model means by name:
// the tool declared under name, else the one tool the name fits among
// the extensions' tools (disclosure.Set.Resolve: its declared name, or
// qualified with its extension's) and the ToolSources' (ShortNames: an
// MCP tool by its own name). A name that fits several is answered with
// them; one that fits none with every tool's name.
func (a *Agent) resolve(name string) (string, error) {
	for _, d := range a.decls {
		if d.Name == name {
			return name, nil
		}
	}
	var fits []string
	if a.Set != nil {
		if t, several := a.Set.Resolve(name); t != nil {
			fits = append(fits, t.Name)
		} else {
			fits = append(fits, several...)
		}
	}
	for _, src := range a.Tools {
		if sn, ok := src.(ShortNames); ok {
			fits = append(fits, sn.ShortName(name)...)
		}
	}
	declared := map[string]bool{}
	for _, d := range a.decls {
		declared[d.Name] = true
	}
	var names []string
	seen := map[string]bool{}
	for _, f := range fits {
		if declared[f] && !seen[f] {
			seen[f] = true
			names = append(names, f)
		}
	}
	switch len(names) {
	case 0:
		return "", fmt.Errorf("there is no tool %q; the tools are %s", name, a.toolNames())
	case 1:
		return names[0], nil
	}
	sort.Strings(names)
	return "", fmt.Errorf("%q could be any of these tools: %s; call the one you mean by its name", name, strings.Join(names, ", "))
}

// toolSource returns the ToolSource that declared name, if one did.
func (a *Agent) toolSource(name string) ToolSource {
	if isBuiltin(name) || (a.Set != nil && a.Set.Tool(name) != nil) {
		return nil
	}
	for _, src := range a.Tools {
		for _, d := range src.Decls() {
			if d.Name == name {
				return src
			}
		}
	}
	return nil
}

func (a *Agent) toolNames() string {
	names := make([]string, len(a.decls))
	for i, d := range a.decls {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}
