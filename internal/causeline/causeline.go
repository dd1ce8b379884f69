// Package causeline picks, from what a program printed on its stderr,
// the line that says why it failed, for the words that tell a person: a
// server that cannot start prints a stack whose last lines are frames
// ("at Module.load (node:internal/...)") and Node's own footer
// ("Node.js v20.20.2"), which say nothing a person can act on, while the
// line that does ("Error: Failed to load keytar native addon", "Error
// [ERR_MODULE_NOT_FOUND]: Cannot find package ...") stands above them,
// and may have scrolled out of the end that is kept.
//
// The cause is the first line that reads as an error, by rule: the
// shape of a thrown error (Node's "Error:", "TypeError:", "Error
// [ERR_X]:", Python's last traceback line "ModuleNotFoundError:"),
// the words programs begin an error with ("Cannot find module",
// "Failed to", "error:", a log line at ERROR or FATAL), a runtime too
// old for the program ("needs Node >= 22"), and npm's EBADENGINE block,
// which is put in a sentence of its own ("x@3.26.0 needs Node >=22.0.0,
// this is v20.20.2"). Stack frames, code excerpts, warnings and
// progress never are. A program whose stderr has none has no cause
// here: its words quote the end of its stderr as before.
package causeline

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// maxLine bounds a line as kept: a cause is read by a person, and a
// program is not trusted to bound what it prints.
const maxLine = 400

// window is how many lines from the cause on are kept: npm's EBADENGINE
// block gives the package and the versions on the lines after its first.
const window = 8

// Finder is an io.Writer that picks the cause from what is written to
// it, line by line as it comes, keeping no more than the lines from the
// cause on (window) and the line under way: it sees all of a program's
// stderr, whose end alone is kept elsewhere. It is safe for concurrent
// use.
type Finder struct {
	mu      sync.Mutex
	partial []byte   // the line under way, at most maxLine bytes of it
	found   []string // the cause's line, then those after it
}

// Write takes p, a part of the program's stderr.
func (f *Finder) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			f.add(rest)
			break
		}
		f.add(rest[:i])
		f.line(string(f.partial))
		f.partial = f.partial[:0]
		rest = rest[i+1:]
	}
	return len(p), nil
}

// add appends b to the line under way, up to maxLine.
func (f *Finder) add(b []byte) {
	if room := maxLine - len(f.partial); len(b) > room {
		b = b[:room]
	}
	f.partial = append(f.partial, b...)
}

// line takes one whole line.
func (f *Finder) line(l string) {
	switch {
	case len(f.found) == 0 && IsCause(l):
		f.found = append(f.found, l)
	case len(f.found) > 0 && len(f.found) < window:
		f.found = append(f.found, l)
	}
}

// Cause is the cause found so far (the line under way taken as whole),
// "" when none.
func (f *Finder) Cause() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines := f.found
	if len(f.partial) > 0 && len(lines) < window && (len(lines) > 0 || IsCause(string(f.partial))) {
		lines = append(lines[:len(lines):len(lines)], string(f.partial))
	}
	return words(lines)
}

// Reset forgets what was written: a new run of the program.
func (f *Finder) Reset() {
	f.mu.Lock()
	f.partial, f.found = f.partial[:0], nil
	f.mu.Unlock()
}

// Of is the cause in text, all of a program's stderr; "" when none.
func Of(text string) string {
	var f Finder
	f.Write([]byte(text))
	return f.Cause()
}

// words put the cause's lines (its own first) in words: its line, or
// npm's EBADENGINE block as a sentence.
func words(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	if strings.Contains(lines[0], "EBADENGINE") {
		if w := engineWords(lines); w != "" {
			return w
		}
	}
	return clean(lines[0])
}

// rules are the package's rules, compiled at their first use: gemkit
// builds nothing at its start that a command may not need.
var rules = sync.OnceValue(func() ruleSet {
	return ruleSet{
		// An ANSI escape sequence of a coloured log.
		escape: regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`),
		// An error as a runtime prints one it did not catch, or as a
		// program prints one it caught: Node's `Error: ...`, `TypeError:
		// ...`, `Error [ERR_MODULE_NOT_FOUND]: ...`,
		// `UnhandledPromiseRejection: ...`, Python's
		// `ModuleNotFoundError: ...`, Java's `java.io.IOException: ...`.
		thrown: regexp.MustCompile(`^(Uncaught )?([A-Za-z_$][\w$.]*)?(Error|Exception|Rejection)( \[[A-Z0-9_]+\])?: \S`),
		// The words programs begin an error line with.
		begun: regexp.MustCompile(`^(Cannot find (module|package) |Failed to |Unable to start |(?i:error|fatal|panic|critical)\s*:\s*\S)`),
		// A log line at level ERROR or FATAL, after at most two words (a
		// time, a logger's name).
		logged: regexp.MustCompile(`^(\S+\s+){0,2}\[?(ERROR|FATAL|CRITICAL)\]?:?\s+\S`),
		// The runtime is not one the program runs on.
		engine: regexp.MustCompile(`(?i)(\b(requires?|needs?)\b.{0,40}\bnode(\.js)?\b\s*(version\s*)?(>=|>|\^|~|v?\d)|\bnode(\.js)?\b.{0,60}\b(is not supported|unsupported|or (later|higher|newer)))`),
	}
})

// ruleSet are the compiled rules.
type ruleSet struct{ escape, thrown, begun, logged, engine *regexp.Regexp }

// IsCause reports whether line reads as the cause of a failure (the
// package's rules).
func IsCause(line string) bool {
	r := rules()
	l := strings.TrimSpace(r.escape.ReplaceAllString(line, ""))
	return r.thrown.MatchString(l) || r.begun.MatchString(l) || r.logged.MatchString(l) ||
		strings.Contains(l, "EBADENGINE") || r.engine.MatchString(l)
}

// clean is a line as a cause: without colour and surrounding space, at
// most maxLine bytes.
func clean(line string) string {
	l := strings.TrimSpace(rules().escape.ReplaceAllString(line, ""))
	if len(l) > maxLine {
		l = l[:maxLine]
	}
	return l
}

// npmRules read npm's EBADENGINE block, compiled at their first use: its
// warning (npm 10 and 11: `package: 'x@1.0.0',`, `required: { node:
// '>=22.0.0' },`, `current: { node: 'v20.20.2', npm: '11.19.1' }`) and
// its error under engine-strict (`Not compatible with your version of
// node/npm: x@1.0.0`, `Required: {"node":">=22.0.0"}`, `Actual:
// {"node":"v20.20.2","npm":"11.19.1"}`), each a package, a need and a
// version had.
var npmRules = sync.OnceValue(func() (out [3][]*regexp.Regexp) {
	out[0] = []*regexp.Regexp{regexp.MustCompile(`package: '([^']+)'`), regexp.MustCompile(`Not compatible with your version of node/npm: (\S+)`)}
	out[1] = []*regexp.Regexp{regexp.MustCompile(`required: \{ node: '([^']+)'`), regexp.MustCompile(`Required: \{"node":"([^"]+)"`)}
	out[2] = []*regexp.Regexp{regexp.MustCompile(`current: \{ node: '([^']+)'`), regexp.MustCompile(`Actual: +\{"node":"([^"]+)"`)}
	return out
})

// engineWords put npm's EBADENGINE block (lines) in a sentence: which
// package needs which Node, and which this is; "" when the block does
// not say.
func engineWords(lines []string) string {
	block := strings.Join(lines, "\n")
	find := func(res ...*regexp.Regexp) string {
		for _, re := range res {
			if m := re.FindStringSubmatch(block); m != nil {
				return m[1]
			}
		}
		return ""
	}
	r := npmRules()
	pkg, need, have := find(r[0]...), find(r[1]...), find(r[2]...)
	if pkg == "" || need == "" || have == "" {
		return ""
	}
	return clean(pkg + " needs Node " + need + ", this is " + have + " (npm's EBADENGINE)")
}
