package hookout

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/agentread"
)

// MaxText is the most characters gemkit passes of each text of a
// hook's answer: its reason, its stop reason, its message to the person
// and its context for the model. Gemini CLI adds a hook's context to
// the model's input at every event the hook runs for (each tool call,
// for AfterTool); 10,000 characters, a quarter of what it keeps of a
// tool's own output (DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD, 40,000,
// config/config.ts), hold a test or lint summary, and keep a hook from
// outweighing the tool it annotates or filling the model's window.
const MaxText = 10000

// Drop is a part of a hook's answer that gemkit did not pass on, or
// cut.
type Drop struct {
	// Field names it as the answer does (hookSpecificOutput.tool_input);
	// empty for the whole answer.
	Field string
	// Why says what Gemini CLI would have done with it, in the person's
	// words.
	Why string
	// Cut: a text, passed cut to MaxText characters.
	Cut bool
}

// Answer is gemkit's answer to Gemini CLI for a hook's run: what it
// writes on stdout and on stderr, its exit code, and what it dropped.
type Answer struct {
	Stdout, Stderr []byte
	Code           int
	Dropped        []Drop
}

// blocks are the events where a hook's block keeps something from
// happening: the tool call, its result reaching the model, the prompt,
// the model's request or its answer. An AfterAgent hook's block does
// the opposite (the agent goes on, the reason its next prompt), and the
// other events act on no decision.
var blocks = map[string]bool{"BeforeTool": true, "AfterTool": true, "BeforeAgent": true, "BeforeModel": true, "AfterModel": true}

// Filter is gemkit's answer for a run of a hook of event that wrote
// stdout and stderr and exited with code: the hook's answer as Gemini
// CLI would read it, less what could act beyond what the person
// approved, with the same exit code; or, for an answer gemkit cannot
// read as Gemini CLI would, the safe answer.
func Filter(event string, stdout, stderr *Buffer, code int) Answer {
	r, err := read(stdout, stderr)
	if err != nil {
		return safe(event, code, err.Error())
	}
	errb, _ := stderr.Bytes()
	var o output
	var d drops
	switch r.form {
	case blank:
		out, _ := stdout.Bytes()
		return Answer{Stdout: out, Stderr: errb, Code: code}
	case none:
		// JSON that is no object: JSON null on stdout makes no output,
		// whatever stderr holds.
		return Answer{Stdout: []byte("null\n"), Stderr: errb, Code: code}
	case asText:
		o = fromText(r.text, code, &d)
	case asJSON:
		o = fromJSON(event, r.v, &d)
	}
	o.mark(event)
	o.note(d)
	stderrOut := append([]byte(nil), errb...)
	for _, x := range d {
		stderrOut = append(stderrOut, "gemkit: "+x.String()+"\n"...)
	}
	return Answer{Stdout: o.encode(), Stderr: stderrOut, Code: code, Dropped: d}
}

// safe is the answer in place of one gemkit cannot read. On an event
// whose block keeps something from happening it is a block, with
// gemkit's words as its reason, whatever the exit code: the answer
// gemkit could not read may have been one (a deny past Limit, or with a
// lone surrogate, is one to Gemini CLI), and an unreadable answer must
// never widen a block. Elsewhere it is a failure Gemini CLI does not
// block on (exit 1, gemkit's words on stderr, which it shows as a
// warning).
func safe(event string, code int, why string) Answer {
	words := "gemkit dropped the hook's answer: " + why
	d := []Drop{{Why: why}}
	if blocks[event] {
		o := output{decision: "deny", reason: words}
		return Answer{Stdout: o.encode(), Stderr: []byte("gemkit: " + words + "\n"), Code: max(code, 2), Dropped: d}
	}
	return Answer{Stderr: []byte(words + "\n"), Code: 1, Dropped: d}
}

// output is the part of a hook's answer gemkit passes on: what Gemini
// CLI acts on that narrows what runs, or only speaks. Where Gemini CLI
// 0.61 reads each (packages/core/src/ unless said):
//
//	stop, stopReason  DefaultHookOutput.shouldStopExecution, getEffectiveReason
//	                  (hooks/types.ts), asked by evaluateBeforeToolHook
//	                  (scheduler/hook-utils.ts), executeToolWithHooks
//	                  (core/coreToolHookTriggers.ts), GeminiClient
//	                  (core/client.ts), HookSystem.fireBeforeModelEvent and
//	                  fireAfterModelEvent (hooks/hookSystem.ts)
//	decision, reason  isBlockingDecision, isAskDecision: the same callers;
//	                  "ask" by Scheduler._processToolCall (scheduler/scheduler.ts)
//	systemMessage     HookEventHandler.logHookExecution (hooks/hookEventHandler.ts),
//	                  SessionStart's in packages/cli/src/gemini.tsx
//	suppress          HookEventHandler.processCommonHookOutputFields
//	context           getAdditionalContext: GeminiClient (BeforeAgent),
//	                  executeToolWithHooks (AfterTool), packages/cli's
//	                  gemini.tsx and AppContainer.tsx (SessionStart)
//	clearContext      AfterAgentHookOutput.shouldClearContext: GeminiClient
//	toolsNone         HookAggregator.mergeToolSelectionOutputs,
//	                  BeforeToolSelectionHookOutput.applyToolConfigModifications
type output struct {
	stop          bool   // continue: false
	stopReason    string // shown, and the model's when a call stops
	decision      string // block, deny or ask
	reason        string
	systemMessage string // shown to the person, never to the model
	suppress      bool
	context       string // hookSpecificOutput.additionalContext
	clearContext  bool   // hookSpecificOutput.clearContext: true
	toolsNone     bool   // hookSpecificOutput.toolConfig.mode: NONE
}

// fromText is convertPlainTextToHookOutput's output for text: a message
// for exit 0, a warning for 1, a block for any other code. Its decision
// "allow" acts on nothing and is left out.
func fromText(text string, code int, d *drops) output {
	switch code {
	case 0:
		return output{systemMessage: d.bound("systemMessage", text)}
	case 1:
		return output{systemMessage: d.bound("systemMessage", "Warning: "+text)}
	}
	return output{decision: "deny", reason: d.bound("reason", text)}
}

// fromJSON is the output of v as Gemini CLI's HookAggregator and hook
// output classes (hooks/types.ts) read it, with what it can act on
// beyond the approval left out. An array is an output with no fields.
func fromJSON(event string, v agentread.Value, d *drops) output {
	var o output
	if !v.IsObject() {
		return o
	}
	if c, ok := v.Get("continue"); ok {
		if b, isBool := c.Bool(); isBool && !b {
			o.stop = true
		}
	}
	if s, ok := v.Get("decision"); ok {
		// isBlockingDecision and isAskDecision compare with ===; allow,
		// approve and the rest act on nothing.
		if s, _ := s.Str(); s == "block" || s == "deny" || s == "ask" {
			o.decision = s
		}
	}
	o.stopReason = d.text(v, "stopReason")
	o.reason = d.text(v, "reason")
	o.systemMessage = d.text(v, "systemMessage")
	if s, ok := v.Get("suppressOutput"); ok {
		o.suppress = s.Truthy()
	}
	hs, ok := v.Get("hookSpecificOutput")
	switch {
	case !ok || !hs.Truthy() || hs.Kind() == agentread.Array:
	case !hs.IsObject():
		d.add("hookSpecificOutput", "it is "+hs.Describe()+", not an object, which Gemini CLI's aggregator cannot read (its 'in' throws): every hook's answer to the event would be lost, other hooks' blocks among them")
	default:
		o.specific(event, hs, d)
	}
	return o
}

// rewrite is a field of hookSpecificOutput that Gemini CLI 0.61 acts on
// after its policy or in its place, which gemkit never passes on.
type rewrite struct{ field, why string }

// rewrites are, by event, the fields of hookSpecificOutput that change
// what runs or what the model and the person were told. A sandboxed
// hook may block, ask, stop and add bounded context; these it may not.
var rewrites = map[string][]rewrite{
	"BeforeTool": {{"tool_input", "a rewrite of the tool call's arguments, which Gemini CLI runs in place of the call the model made (evaluateBeforeToolHook, scheduler/hook-utils.ts): what runs would be the hook's choice, not the call your approval mode and policy let through"}},
	"AfterTool":  {{"tailToolCallRequest", "a tool call of the hook's choosing, which Gemini CLI runs in place of this call's result (executeToolWithHooks, core/coreToolHookTriggers.ts, then Scheduler._execute)"}},
	"BeforeModel": {
		{"llm_request", "a rewrite of the request to the model: its model, its settings and every message of the conversation, yours among them (BeforeModelHookOutput.applyLLMRequestModifications, hooks/types.ts)"},
		{"llm_response", "an answer in the model's name that the model did not give (BeforeModelHookOutput.getSyntheticResponse, hooks/types.ts)"},
	},
	"AfterModel": {{"llm_response", "a rewrite of the model's answer (AfterModelHookOutput.getModifiedResponse, hooks/types.ts)"}},
}

// toolConfigWhy is why a BeforeToolSelection hook's toolConfig other
// than mode NONE is dropped.
const toolConfigWhy = "a tool configuration other than mode NONE (mode ANY makes the model call a tool at every turn, and allowedFunctionNames chooses which: BeforeToolSelectionHookOutput.applyToolConfigModifications, hooks/types.ts): a sandboxed hook may take the tools away, never choose or force them"

// specific reads hookSpecificOutput, an object, into o.
func (o *output) specific(event string, hs agentread.Value, d *drops) {
	if c, ok := hs.Get("additionalContext"); ok {
		// getAdditionalContext takes a string only.
		if s, isStr := c.Str(); isStr {
			o.context = d.bound("hookSpecificOutput.additionalContext", s)
		}
	}
	if c, ok := hs.Get("clearContext"); ok {
		o.clearContext, _ = c.Bool()
	}
	for _, r := range rewrites[event] {
		if f, ok := hs.Get(r.field); ok && f.Truthy() {
			d.add("hookSpecificOutput."+r.field, r.why)
		}
	}
	if event != "BeforeToolSelection" {
		return
	}
	if tc, ok := hs.Get("toolConfig"); ok && tc.Truthy() {
		mode, _ := tc.Get("mode")
		if m, _ := mode.Str(); m == "NONE" {
			o.toolsNone = true
		} else {
			d.add("hookSpecificOutput.toolConfig", toolConfigWhy)
		}
	}
}

// mark marks an AfterAgent hook's block reason as the hook's. Gemini
// CLI sends it to the model as the next prompt, in the person's place
// (GeminiClient.sendMessageStream, core/client.ts, continueRequest);
// gemkit wraps it as Gemini CLI wraps a hook's context everywhere else
// (<hook_context>, with < and > escaped: getAdditionalContext), so that
// the model does not take the hook's words for the person's.
func (o *output) mark(event string) {
	if event == "AfterAgent" && (o.decision == "block" || o.decision == "deny") && o.reason != "" {
		o.reason = "<hook_context>" + strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(o.reason) + "</hook_context>"
	}
}

// note tells the person, in the answer's message (which Gemini CLI
// shows and never gives the model), what gemkit left out or cut.
func (o *output) note(d drops) { o.systemMessage = d.note(o.systemMessage) }

// note is msg, the message of gemkit's answer to the person, with the
// words that say what gemkit left out or cut of the hook's answer
// after it; msg alone when d is empty.
func (d drops) note(msg string) string {
	var left, cut []string
	for _, x := range d {
		if x.Cut {
			cut = append(cut, x.Field)
		} else {
			left = append(left, x.Field)
		}
	}
	var parts []string
	if len(left) > 0 {
		parts = append(parts, "left out "+strings.Join(left, ", "))
	}
	if len(cut) > 0 {
		parts = append(parts, "cut "+strings.Join(cut, ", ")+fmt.Sprintf(" to %d characters", MaxText))
	}
	if len(parts) == 0 {
		return msg
	}
	words := "gemkit " + strings.Join(parts, " and ") + " of this sandboxed hook's answer; gemkit extensions doctor says why"
	if msg != "" {
		return msg + "\n" + words
	}
	return words
}

// drops are what Filter dropped or cut.
type drops []Drop

func (d *drops) add(field, why string) { *d = append(*d, Drop{Field: field, Why: why}) }

// text is the member key of v as a text Gemini CLI uses (it takes any
// truthy value, and shows or sends it as JavaScript writes it): a
// string, bounded; another truthy value is dropped.
func (d *drops) text(v agentread.Value, key string) string {
	m, ok := v.Get(key)
	if !ok || !m.Truthy() {
		return ""
	}
	s, isStr := m.Str()
	if !isStr {
		d.add(key, "it is "+m.Describe()+", not text, which Gemini CLI would show or send as JavaScript writes it")
		return ""
	}
	return d.bound(key, s)
}

// bound is s cut to MaxText characters, saying so in the text and in
// d.
func (d *drops) bound(field, s string) string {
	n := utf8.RuneCountInString(s)
	if n <= MaxText {
		return s
	}
	i := 0
	for range MaxText {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	*d = append(*d, Drop{Field: field, Cut: true,
		Why: fmt.Sprintf("%d characters, past the %d gemkit passes of a hook's text to the agent", n, MaxText)})
	return s[:i] + fmt.Sprintf("\n[gemkit cut %d more characters of this hook's text]", n-MaxText)
}

// String is d in words, for the hook's stderr.
func (x Drop) String() string {
	switch {
	case x.Field == "":
		return "dropped the hook's answer: " + x.Why
	case x.Cut:
		return "cut " + x.Field + " of the hook's answer: " + x.Why
	}
	return "left out " + x.Field + " of the hook's answer: " + x.Why
}
