// Package hookout is what gemkit tells Gemini CLI of a switched hook's
// run. Gemini CLI 0.61 acts on a command hook's answer after its own
// policy (hookSpecificOutput.tool_input becomes the call that runs,
// tailToolCallRequest a call of the hook's choosing, llm_request the
// model's conversation), so a hook that its sandbox lets write nothing
// could still have the agent write for it. gemkit therefore never
// passes the hook's stdout on: it reads the hook's stdout, stderr and
// exit code exactly as Gemini CLI reads a command hook's
// (HookRunner.executeCommandHook in
// packages/core/src/hooks/hookRunner.ts: the trimmed stdout, else the
// trimmed stderr, through JSON.parse, read with internal/agentread, or
// as plain text by the exit code), keeps of it only what cannot act
// beyond what the person approved (Filter), and writes that as its own
// answer, in ASCII JSON that Gemini CLI reads back exactly. What it
// dropped it says, to the person and in the record of the hook's
// refusals. docs/sandbox.md, "What a sandboxed part returns", has the
// table of every field and what Gemini CLI does with it.
//
// FilterClaude is the same for a hook that Claude Code 2.1.330 runs
// (a switched Claude Code plugin's, `--agent claude`), from the same
// reading of the bytes and with the same bounds, by Claude Code's
// rules (claude.go).
package hookout

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/agentread"
)

// Limit is how much of each of the hook's stdout and stderr gemkit
// reads. Gemini CLI reads all of it; a hook's answer is a verdict and
// a few lines of context, far below, and one past the limit is not
// read at all (the safe answer goes in its place), so that gemkit keeps
// no more of a hook's output than this in memory.
const Limit = 1 << 20

// Buffer keeps the first Limit bytes written to it and says whether
// more came; a write never fails, so that the hook never waits on a
// full pipe.
type Buffer struct {
	mu   sync.Mutex
	b    []byte
	over bool
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := Limit - len(b.b)
	if len(p) > room {
		b.over = true
		b.b = append(b.b, p[:room]...)
	} else {
		b.b = append(b.b, p...)
	}
	return len(p), nil
}

// Bytes are what was kept, and whether more came than was kept.
func (b *Buffer) Bytes() (kept []byte, over bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b, b.over
}

// form is what Gemini CLI makes of a hook's output.
type form int

const (
	// blank: nothing but white space, and so no output.
	blank form = iota
	// none: JSON that is neither an object nor an array, nor a string
	// holding one: no output either.
	none
	// asJSON: the parsed object, or array.
	asJSON
	// asText: plain text, which convertPlainTextToHookOutput turns into
	// an output by the exit code.
	asText
)

// reading is a hook's output as Gemini CLI reads it.
type reading struct {
	form form
	v    agentread.Value
	text string
}

// read reads a hook's output as executeCommandHook's close handler
// does: stdout.trim() || stderr.trim() (each decoded as UTF-8), then
// JSON.parse, and JSON.parse again of a string it gives; an object or
// an array is the output, a text JSON.parse refuses is plain text. An
// error says why gemkit cannot read it as Gemini CLI would: more than
// Limit, text that is not UTF-8 (Node replaces the bad bytes, chunk by
// chunk), or JSON agentread cannot read as JSON.parse does.
func read(stdout, stderr *Buffer) (reading, error) {
	text, err := trimmed(stdout, "stdout")
	if err == nil && text == "" {
		text, err = trimmed(stderr, "stderr")
	}
	if err != nil || text == "" {
		return reading{form: blank}, err
	}
	v, err := agentread.ParseJSON([]byte(text))
	if agentread.IsUnreadable(err) {
		return reading{}, err
	} else if err != nil {
		return reading{form: asText, text: text}, nil
	}
	if s, ok := v.Str(); ok {
		v, err = agentread.ParseJSON([]byte(s))
		if agentread.IsUnreadable(err) {
			return reading{}, err
		} else if err != nil {
			return reading{form: asText, text: text}, nil
		}
	}
	if k := v.Kind(); k == agentread.Object || k == agentread.Array {
		return reading{form: asJSON, v: v}, nil
	}
	return reading{form: none}, nil
}

// unreadable says why gemkit does not read a hook's output.
type unreadable string

func (u unreadable) Error() string { return string(u) }

// trimmed is what b holds, trimmed as JavaScript's String.prototype.trim
// trims.
func trimmed(b *Buffer, name string) (string, error) {
	kept, over := b.Bytes()
	if over {
		return "", unreadable("it wrote more than 1 MiB on " + name + ", past what gemkit reads of a hook's answer")
	}
	if !utf8.Valid(kept) {
		return "", unreadable("its " + name + " is not valid UTF-8 (Node replaces the bad bytes, and gemkit does not guess how)")
	}
	return strings.TrimFunc(string(kept), jsSpace), nil
}

// jsSpace says whether trim removes r: ECMAScript's WhiteSpace (tab,
// vertical tab, form feed, space, no-break space, the byte order mark,
// and Unicode's space separators) and LineTerminator.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
