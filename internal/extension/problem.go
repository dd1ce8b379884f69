package extension

// What a manifest's problems are, and what each stops.

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one thing wrong with a manifest, with where it is and how to
// fix it.
type Problem struct {
	// Path is the JSON path of the offending value, e.g.
	// "tools[1].executable"; empty for the manifest as a whole.
	Path string `json:"path"`
	// Message says what is wrong, read after the path.
	Message string `json:"message"`
	// Fix says what to do about it.
	Fix string `json:"fix"`
	// Effect is what the problem stops (Effect's values); set for every
	// problem Load returns.
	Effect Effect `json:"effect"`
}

// Effect is what a manifest's problem stops. gemkit installs whatever
// Gemini CLI 0.61 installs: only what Gemini CLI refuses too stops an
// install, link or update; a problem in the fields only gemkit reads
// (its tools, docs, examples and permissions) stops gemkit running the
// extension's own tools, while the rest (its MCP servers, context,
// skills, hooks) is installed and served as Gemini CLI has it.
type Effect string

// The effects, from the most to the least that stops.
const (
	// EffectRefused: Gemini CLI refuses the manifest too
	// (geminiRefusals); nothing is installed, and an installed one is
	// left out by both. (What gemkit cannot read as Gemini CLI does is
	// no problem but an error, agentread.Unreadable.)
	EffectRefused Effect = "refused"
	// EffectTools: gemkit does not run the extension's own tools, nor
	// offers them or its docs to a model.
	EffectTools Effect = "tools"
	// EffectWarning stops nothing: Gemini CLI ignores it, and so does
	// gemkit; `gemkit extensions validate` says it.
	EffectWarning Effect = "warning"
)

// Words says in a few words what the effect stops, for a person.
func (e Effect) Words() string {
	switch e {
	case EffectRefused:
		return "Gemini CLI refuses the extension too, and gemkit does not install it"
	case EffectTools:
		return "gemkit does not run the extension's own tools"
	}
	return "a warning: it stops nothing"
}

// effectAt is the effect of a problem at path: a field only gemkit reads
// (the plan's tools, docs, examples and permissions) stops its tools;
// any other problem that gemkit's reading did not mark refused is
// Gemini CLI's to ignore, as it does.
func effectAt(path string) Effect {
	head, _, _ := strings.Cut(path, ".")
	head, _, _ = strings.Cut(head, "[")
	switch head {
	case "tools", "docs", "examples", "permissions":
		return EffectTools
	}
	return EffectWarning
}

// withEffects gives each problem of probs without an effect the one of
// its path.
func withEffects(probs []Problem) []Problem {
	for i := range probs {
		if probs[i].Effect == "" {
			probs[i].Effect = effectAt(probs[i].Path)
		}
	}
	return probs
}

func (p Problem) String() string {
	where := p.Path
	if where == "" {
		where = "manifest"
	}
	return fmt.Sprintf("%s: %s (fix: %s)", where, p.Message, p.Fix)
}

// ValidationError lists the problems of one manifest that stop
// something: those Gemini CLI refuses too, and those that stop gemkit
// running the extension's tools. Warnings are in Extension.Problems
// only.
type ValidationError struct {
	File     string
	Problems []Problem
}

// effect is the effect all of e's problems have, "" when they differ.
func (e *ValidationError) effect() Effect {
	var out Effect
	for i, p := range e.Problems {
		if i > 0 && p.Effect != out {
			return ""
		}
		out = p.Effect
	}
	return out
}

// Refuses reports whether the manifest is one Gemini CLI refuses too:
// install, link and update refuse it, and both tools leave an installed
// one out.
func (e *ValidationError) Refuses() bool {
	for _, p := range e.Problems {
		if p.Effect == EffectRefused {
			return true
		}
	}
	return false
}

// Refusal is the error that stops an install, link or update of the
// extension whose load gave err: err itself, but for a *ValidationError
// of problems that stop only gemkit's tools, which is no refusal (nil),
// and one that refuses, which is told by the problems that refuse.
func Refusal(err error) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	if !ve.Refuses() {
		return nil
	}
	only := &ValidationError{File: ve.File}
	for _, p := range ve.Problems {
		if p.Effect == EffectRefused {
			only.Problems = append(only.Problems, p)
		}
	}
	return only
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s has %d problem", e.File, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	switch e.effect() {
	case EffectRefused:
		b.WriteString(" that Gemini CLI refuses too")
	case EffectTools:
		b.WriteString(" in the fields only gemkit reads: gemkit does not run the extension's own tools until they are fixed")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}
