package hookout

import (
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
)

// Claude Code 2.1.330 reads a command hook's answer in its hook runner
// (the native binary's bundled JavaScript; its functions are minified,
// so they are named here by the words they log and throw):
//
//   - stdout, trimmed (JavaScript's trim), is JSON only when it starts
//     with "{" ("Hook output does not start with {, treating as plain
//     text"); {"async":true} makes the run a background one;
//   - JSON.parse, then the hook output schema (zod: "Whether Claude
//     should continue after hook (default: true)" is its first field's
//     description); an answer that does not fit it is not acted on (a
//     non-blocking error, a block at exit 2), and one that starts with
//     "{" that JSON.parse refuses is plain text, or not acted on, by
//     rules gemkit does not follow here ("Hook output looks like a JSON
//     object but is not valid JSON", "several JSON documents");
//   - a valid answer is acted on field by field (processHookJSONOutput:
//     "Unknown hook decision type: ... Valid types are: approve,
//     block"): top-level decision "approve" allows a tool call without
//     the permission prompt, PreToolUse's permissionDecision "allow"
//     too, updatedInput replaces the call's arguments,
//     PermissionRequest's decision "allow" grants the permission, and
//     so on (claudeMembers);
//   - exit code 2 is a block: stderr is the reason the model reads
//     (a tool call refused, a prompt erased, a stop refused); another
//     code than 0 and 2 a non-blocking error shown to the person.
//
// FilterClaude keeps of this only what blocks, asks, stops or speaks
// (bounded), as Filter does for Gemini CLI.

// claudeGates are the events where Claude Code 2.1.330 refuses what
// the hook gates when a hook's answer cannot be read ("Refused: the
// ... hook gave no answer that could be read"), and where exit code 2
// keeps something from happening: the answer gemkit cannot read is a
// block there.
var claudeGates = map[string]bool{
	"PreToolUse": true, "PermissionRequest": true, "PreModelSwitch": true, "UserPromptSubmit": true,
	"UserPromptExpansion": true, "ConfigChange": true, "Elicitation": true, "ElicitationResult": true,
}

// check says whether a value fits a field of Claude Code's hook output
// schema.
type check func(agentread.Value) bool

func isString(v agentread.Value) bool { _, ok := v.Str(); return ok }
func isBool(v agentread.Value) bool   { _, ok := v.Bool(); return ok }

// isRecord: z.record, an object (an array is not one).
func isRecord(v agentread.Value) bool { return v.IsObject() }

// isAny: z.unknown, any value.
func isAny(agentread.Value) bool { return true }

// isStrings: an array of strings.
func isStrings(v agentread.Value) bool {
	elems, ok := v.Elems()
	for _, e := range elems {
		ok = ok && isString(e)
	}
	return ok
}

// oneOf: z.enum of words.
func oneOf(words ...string) check {
	return func(v agentread.Value) bool {
		s, ok := v.Str()
		return ok && slices.Contains(words, s)
	}
}

// unsure marks a field whose schema gemkit does not check to the
// letter (PermissionRequest's updatedPermissions, a list of permission
// rules): present, the answer is one gemkit cannot read as Claude Code
// would.
func unsure(agentread.Value) bool { return false }

// claudeTop is the top of Claude Code 2.1.330's hook output schema, but
// hookSpecificOutput: each field optional (absent, not null).
var claudeTop = map[string]check{
	"continue": isBool, "suppressOutput": isBool, "stopReason": isString, "decision": oneOf("approve", "block"),
	"reason": isString, "systemMessage": isString, "terminalSequence": isString,
}

// claudeMembers are hookSpecificOutput's members in Claude Code
// 2.1.330's schema, by hookEventName (a union of objects each with its
// literal hookEventName): an event not here has none, and a
// hookSpecificOutput naming it fails the schema. Required fields are
// in claudeRequired.
var claudeMembers = map[string]map[string]check{
	"PreToolUse": {"permissionDecision": oneOf("allow", "deny", "ask", "defer"), "permissionDecisionReason": isString,
		"updatedInput": isRecord, "additionalContext": isString, "permissionDisplay": isAny},
	"UserPromptSubmit":    {"additionalContext": isString, "sessionTitle": isString, "suppressOriginalPrompt": isBool},
	"UserPromptExpansion": {"additionalContext": isString, "suppressOriginalPrompt": isBool},
	"SessionStart": {"additionalContext": isString, "initialUserMessage": isString, "sessionTitle": isString,
		"watchPaths": isStrings, "reloadSkills": isBool},
	"Setup":           {"additionalContext": isString},
	"PreModelSwitch":  {"permissionDecision": oneOf("allow", "deny", "ask"), "permissionDecisionReason": isString},
	"PostModelSwitch": {"additionalContext": isString},
	"SubagentStart":   {"additionalContext": isString},
	"PostToolUse": {"additionalContext": isString, "classifierContext": isString,
		"updatedToolOutput": isAny, "updatedMCPToolOutput": isAny},
	"PostToolUseFailure": {"additionalContext": isString},
	"PostToolBatch":      {"additionalContext": isString},
	"Stop":               {"additionalContext": isString},
	"SubagentStop":       {"additionalContext": isString},
	"PermissionDenied":   {"retry": isBool},
	"Notification":       {"additionalContext": isString},
	"PermissionRequest":  {"decision": isPermissionDecision},
	"Elicitation":        {"action": oneOf("accept", "decline", "cancel"), "content": isRecord},
	"ElicitationResult":  {"action": oneOf("accept", "decline", "cancel"), "content": isRecord},
	"CwdChanged":         {"watchPaths": isStrings},
	"FileChanged":        {"watchPaths": isStrings},
	"WorktreeCreate":     {"worktreePath": isString},
	"MessageDisplay":     {"displayContent": isString},
}

// claudeRequired are the members' fields that must be there.
var claudeRequired = map[string]string{"PermissionRequest": "decision", "WorktreeCreate": "worktreePath"}

// isPermissionDecision: PermissionRequest's decision, {behavior:
// "allow", updatedInput?, updatedPermissions?} or {behavior: "deny",
// message?, interrupt?}.
func isPermissionDecision(v agentread.Value) bool {
	if !v.IsObject() {
		return false
	}
	b, _ := v.Get("behavior")
	fields := map[string]check{"message": isString, "interrupt": isBool}
	switch s, _ := b.Str(); s {
	case "allow":
		fields = map[string]check{"updatedInput": isRecord, "updatedPermissions": unsure}
	case "deny":
	default:
		return false
	}
	return fits(v, fields)
}

// fits says whether each field of the object v that fields name fits
// its check (the others, z.object strips).
func fits(v agentread.Value, fields map[string]check) bool {
	for k, c := range fields {
		if f, ok := v.Get(k); ok && !c(f) {
			return false
		}
	}
	return true
}

// claudeUnfit says why the object v does not fit Claude Code's hook
// output schema, "" when it does.
func claudeUnfit(v agentread.Value) string {
	for _, k := range v.Keys() {
		f, _ := v.Get(k)
		if c, ok := claudeTop[k]; ok && !c(f) {
			return k + " is " + f.Describe()
		}
	}
	hs, ok := v.Get("hookSpecificOutput")
	if !ok {
		return ""
	}
	if !hs.IsObject() {
		return "hookSpecificOutput is " + hs.Describe() + ", not an object"
	}
	name, _ := hs.Get("hookEventName")
	event, _ := name.Str()
	member, ok := claudeMembers[event]
	if !ok {
		return "hookSpecificOutput's hookEventName is " + name.Describe() + ", no event whose answer has one"
	}
	if req := claudeRequired[event]; req != "" {
		if _, ok := hs.Get(req); !ok {
			return "hookSpecificOutput of " + event + " has no " + req
		}
	}
	if !fits(hs, member) {
		return "a field of hookSpecificOutput of " + event + " is not of its type, or not one gemkit checks to the letter"
	}
	return ""
}

// claudeOutput is what gemkit passes of a hook's JSON answer to Claude
// Code.
type claudeOutput struct {
	stop          bool   // continue: false
	stopReason    string // with it
	suppress      bool   // suppressOutput: true
	block         bool   // decision: "block"
	reason        string
	systemMessage string
	// event is hookSpecificOutput's hookEventName, when anything of it
	// is passed; the rest is its fields.
	event            string
	decision         string // permissionDecision deny or ask; PermissionRequest's deny
	decisionReason   string // permissionDecisionReason, or the deny's message
	interrupt        bool   // PermissionRequest's deny stops Claude
	context          string // additionalContext
	suppressOriginal bool   // suppressOriginalPrompt: true
	action           string // Elicitation's decline or cancel
}

// claudeWhy are, by field as the answer names it, the fields of a
// hook's answer that Claude Code 2.1.330 acts on beyond what the person
// approved, and what it does with each; gemkit never passes them.
var claudeWhy = map[string]string{
	"decision approve":         "a top-level \"approve\", which lets the tool call run without Claude Code's permission prompt",
	"terminalSequence":         "an escape sequence Claude Code writes to your terminal (its title, a notification) in the hook's words",
	"permissionDecision allow": "\"allow\", which lets what the hook gates (a tool call, a switch of model) go on without Claude Code's prompt",
	"permissionDecision defer": "\"defer\", which hands the call's permission to another party than your rules and prompt",
	"updatedInput":             "a rewrite of the tool call's arguments, which Claude Code runs in place of the call the model made",
	"permissionDisplay":        "what Claude Code's permission prompt shows you of the call, in the hook's words",
	"sessionTitle":             "the session's title, set by the hook",
	"initialUserMessage":       "a message sent to the model in your place",
	"watchPaths":               "folders Claude Code watches to run FileChanged hooks",
	"reloadSkills":             "skills re-read after the hook, which could add some of the hook's choosing",
	"classifierContext":        "words the auto-mode permission classifier may weigh as yours",
	"updatedToolOutput":        "a rewrite of the tool's result before the model reads it",
	"updatedMCPToolOutput":     "a rewrite of the MCP tool's result before the model reads it",
	"retry":                    "a retry of a call your permissions denied",
	"decision allow":           "a permission granted in your place, without the prompt",
	"action accept":            "an answer to an MCP server's question in your place",
	"content":                  "an answer to an MCP server's question in your place",
	"worktreePath":             "the folder Claude Code works in, chosen by the hook",
	"displayContent":           "what Claude Code shows you of the model's answer, in the hook's words",
	"hookEventName":            "hookSpecificOutput naming another event than the hook's, which Claude Code would not act on",
	"async":                    "a run in the background, which gemkit does not give a sandboxed hook: it ran it to its end",
	"WorktreeCreate":           "the folder Claude Code works in, chosen by the hook",
}

// FilterClaude is gemkit's answer to Claude Code 2.1.330 for a run of
// a hook of event that wrote stdout and stderr and exited with code:
// the hook's answer as Claude Code would read it, less what could act
// beyond what the person approved, with the same exit code; for an
// answer gemkit cannot read as Claude Code would, the safe answer.
func FilterClaude(event string, stdout, stderr *Buffer, code int) Answer {
	errOut := claudeStderr(stderr)
	text, err := trimmed(stdout, "stdout")
	if err != nil {
		return claudeSafe(event, err.Error())
	}
	var d drops
	switch {
	case text == "":
		return Answer{Stderr: errOut, Code: code}
	case event == "WorktreeCreate":
		// Its plain stdout is the worktree's folder too.
		d.add("stdout", claudeWhy["WorktreeCreate"])
		return Answer{Stderr: d.words(errOut), Code: max(code, 1), Dropped: d}
	case !strings.HasPrefix(text, "{"):
		// Plain text: context for the model on some events, shown
		// elsewhere.
		return Answer{Stdout: []byte(d.bound("stdout", text) + "\n"), Stderr: d.words(errOut), Code: code, Dropped: d}
	}
	v, err := agentread.ParseJSON([]byte(text))
	if err != nil {
		return claudeSafe(event, "it starts with { and is not one JSON object, which Claude Code reads as plain text or not at all by rules gemkit does not follow: "+err.Error())
	}
	if a, ok := v.Get("async"); ok {
		if b, _ := a.Bool(); b {
			d.add("async", claudeWhy["async"])
			return Answer{Stderr: d.words(errOut), Code: code, Dropped: d}
		}
	}
	if why := claudeUnfit(v); why != "" {
		// Claude Code acts on no field of it: a block at exit 2, an
		// error shown to the person otherwise.
		words := "the hook's answer does not fit Claude Code's hook output schema (" + why + "), so Claude Code would act on none of it"
		return Answer{Stderr: append(errOut, "gemkit: "+words+"\n"...), Code: max(code, 1), Dropped: []Drop{{Why: words}}}
	}
	o := claudeFromJSON(event, v, &d)
	o.systemMessage = d.note(o.systemMessage)
	return Answer{Stdout: o.encode(), Stderr: d.words(errOut), Code: code, Dropped: d}
}

// claudeStderr is the hook's stderr as gemkit passes it on: Claude Code
// shows it to the person, and at exit 2 gives it to the model as the
// block's reason, so it is bounded; bytes that are not UTF-8 become
// U+FFFD, as Claude Code decodes them.
func claudeStderr(stderr *Buffer) []byte {
	kept, _ := stderr.Bytes()
	s := strings.TrimFunc(strings.ToValidUTF8(string(kept), "\ufffd"), jsSpace)
	if s == "" {
		return nil
	}
	var d drops
	return []byte(d.bound("stderr", s) + "\n")
}

// words is errOut with, after it, a line for each of d.
func (d drops) words(errOut []byte) []byte {
	for _, x := range d {
		errOut = append(errOut, "gemkit: "+x.String()+"\n"...)
	}
	return errOut
}

// claudeSafe is the answer in place of one gemkit cannot read as Claude
// Code 2.1.330 would: where an unreadable answer could have been a
// block (claudeGates), a block, with gemkit's words as its reason (exit
// 2, which Claude Code gives the model); elsewhere an error it shows
// the person and acts on no further (exit 1).
func claudeSafe(event, why string) Answer {
	words := "gemkit dropped the hook's answer: " + why
	code := 1
	if claudeGates[event] {
		code = 2
	}
	return Answer{Stderr: []byte(words + "\n"), Code: code, Dropped: []Drop{{Why: why}}}
}

// claudeFromJSON is the part of v, an answer that fits Claude Code's
// schema, that gemkit passes for event.
func claudeFromJSON(event string, v agentread.Value, d *drops) claudeOutput {
	var o claudeOutput
	if c, ok := v.Get("continue"); ok {
		b, _ := c.Bool()
		o.stop = !b
	}
	if s, ok := v.Get("suppressOutput"); ok {
		o.suppress, _ = s.Bool()
	}
	if s, ok := v.Get("decision"); ok {
		if w, _ := s.Str(); w == "block" {
			o.block = true
		} else {
			d.add("decision", claudeWhy["decision approve"])
		}
	}
	if _, ok := v.Get("terminalSequence"); ok {
		d.add("terminalSequence", claudeWhy["terminalSequence"])
	}
	o.stopReason = claudeText(v, "stopReason", d)
	o.reason = claudeText(v, "reason", d)
	o.systemMessage = claudeText(v, "systemMessage", d)
	hs, ok := v.Get("hookSpecificOutput")
	if !ok {
		return o
	}
	name, _ := hs.Get("hookEventName")
	if n, _ := name.Str(); n != event {
		d.add("hookSpecificOutput", claudeWhy["hookEventName"])
		return o
	}
	o.specific(event, hs, d)
	return o
}

// claudeText is v's text field key, bounded ("" when absent).
func claudeText(v agentread.Value, key string, d *drops) string {
	f, _ := v.Get(key)
	s, _ := f.Str()
	return d.bound(key, s)
}

// specific reads hookSpecificOutput of event, which fits its member,
// into o: its context, and its decisions that deny, ask, decline or
// cancel; the rest is dropped, with why.
func (o *claudeOutput) specific(event string, hs agentread.Value, d *drops) {
	const in = "hookSpecificOutput."
	member := claudeMembers[event]
	// field is hs's field k, when event's member has it: z.object
	// strips the others, and Claude Code acts on none of them.
	field := func(k string) (agentread.Value, bool) {
		if member[k] == nil {
			return agentread.Value{}, false
		}
		return hs.Get(k)
	}
	str := func(k string) string { f, _ := field(k); s, _ := f.Str(); return s }
	o.context = d.bound(in+"additionalContext", str("additionalContext"))
	if s, ok := field("suppressOriginalPrompt"); ok {
		o.suppressOriginal, _ = s.Bool()
	}
	switch pd := str("permissionDecision"); pd {
	case "deny", "ask":
		o.decision = pd
		o.decisionReason = d.bound(in+"permissionDecisionReason", str("permissionDecisionReason"))
	case "":
	default:
		d.add(in+"permissionDecision", claudeWhy["permissionDecision "+pd])
	}
	if dec, ok := field("decision"); ok {
		if strOf(dec, "behavior") == "deny" {
			o.decision = "deny"
			o.decisionReason = d.bound(in+"decision.message", strOf(dec, "message"))
			i, _ := dec.Get("interrupt")
			o.interrupt, _ = i.Bool()
		} else {
			d.add(in+"decision", claudeWhy["decision allow"])
		}
	}
	switch a := str("action"); a {
	case "decline", "cancel":
		o.action = a
	case "accept":
		d.add(in+"action", claudeWhy["action accept"])
	}
	for _, k := range hs.Keys() {
		if why, ok := claudeWhy[k]; ok && member[k] != nil {
			d.add(in+k, why)
		}
	}
	if o.context != "" || o.suppressOriginal || o.decision != "" || o.action != "" {
		o.event = event
	}
}

// strOf is the string field key of the object v, "" when it is none.
func strOf(v agentread.Value, key string) string {
	f, _ := v.Get(key)
	s, _ := f.Str()
	return s
}

// encode is o as the JSON object gemkit writes on the hook's stdout, on
// one line of ASCII, its fields in a fixed order.
func (o claudeOutput) encode() []byte {
	var top object
	if o.stop {
		top.raw("continue", "false")
	}
	top.str("stopReason", o.stopReason)
	if o.suppress {
		top.raw("suppressOutput", "true")
	}
	if o.block {
		top.str("decision", "block")
	}
	top.str("reason", o.reason)
	top.str("systemMessage", o.systemMessage)
	if o.event != "" {
		top.raw("hookSpecificOutput", o.specificJSON())
	}
	return []byte(top.String() + "\n")
}

// specificJSON is o's hookSpecificOutput, for its event.
func (o claudeOutput) specificJSON() string {
	var hs object
	hs.str("hookEventName", o.event)
	switch o.event {
	case "PermissionRequest":
		if o.decision != "" {
			var dec object
			dec.str("behavior", "deny")
			dec.str("message", o.decisionReason)
			if o.interrupt {
				dec.raw("interrupt", "true")
			}
			hs.raw("decision", dec.String())
		}
	default:
		hs.str("permissionDecision", o.decision)
		hs.str("permissionDecisionReason", o.decisionReason)
	}
	hs.str("action", o.action)
	hs.str("additionalContext", o.context)
	if o.suppressOriginal {
		hs.raw("suppressOriginalPrompt", "true")
	}
	return hs.String()
}

// geminiToClaude are Claude Code's events for Gemini CLI's, where one
// is the other's: a switched plugin's twin extension may name its
// hooks' events either way.
var geminiToClaude = map[string]string{
	"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse", "BeforeAgent": "UserPromptSubmit", "AfterAgent": "Stop",
	"PreCompress": "PreCompact",
}

// ClaudeEvent is Claude Code's name of the hook event event, which a
// twin extension's hooks file names in Claude Code's words or in
// Gemini CLI's (BeforeTool is PreToolUse).
func ClaudeEvent(event string) string {
	if e, ok := geminiToClaude[event]; ok {
		return e
	}
	return event
}
