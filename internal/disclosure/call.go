package disclosure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/toolrun"
)

// Limits bound one tool call; zero fields take the runner's defaults.
type Limits struct {
	Timeout     time.Duration
	MaxOutput   int64
	MemoryBytes uint64
}

// CallResult is a call's outcome worded for a model.
type CallResult struct {
	// Text is what the model reads: the tool's output on success; on
	// failure what went wrong and what to do, with the tool's stderr.
	Text string
	// IsError reports a failed call (the tool did not run, or ran and
	// failed).
	IsError bool
	// Result is the runner's result when the tool ran, else nil.
	Result *toolrun.Result
	// Doc is the doc read when the call was read_doc and succeeded.
	Doc *Doc
	// Err is the underlying error of a failed call, for logs and
	// errors.As (a *toolrun.ConsentError, *toolrun.ArgError,
	// *toolrun.ToolError, *DocError, ...).
	Err error
}

// Call calls the tool exposed as name (or read_doc) with args, a JSON
// object (empty or null means no arguments), through r, the sandboxed
// runner: the same sandbox, limits and consent as `gemkit extensions run`.
// It never returns a Go error: every failure, from an unknown name to a
// crashing tool, is a CallResult with IsError and words a model can act
// on. Cancelling ctx kills the tool and everything it started.
func (s *Set) Call(ctx context.Context, r *toolrun.Runner, name string, args json.RawMessage, lim Limits) CallResult {
	parsed, err := decodeArgs(args)
	if err != nil {
		return fail(fmt.Sprintf("The arguments to %s are not a JSON object: %v.", name, err), err)
	}
	if name == ReadDocTool {
		ext, _ := parsed["extension"].(string)
		doc, _ := parsed["name"].(string)
		if ext == "" && doc != "" {
			var err error
			if ext, doc, err = s.docOwner(doc); err != nil {
				return fail(err.Error()+".", err)
			}
		}
		if ext == "" || doc == "" {
			err := &DocError{"read_doc needs two string arguments: extension (the extension's name) and name (the doc's name, or skill: and a skill's name)"}
			return fail(err.Msg+".", err)
		}
		d, err := s.ReadDoc(ext, doc)
		if err != nil {
			return fail(err.Error()+".", err)
		}
		if d.Text == "" {
			return CallResult{Text: fmt.Sprintf("(%s of extension %s is empty.)", d.Name, d.Extension), Doc: d}
		}
		return CallResult{Text: d.Text, Doc: d}
	}
	t, fits := s.Resolve(name)
	if t == nil {
		if len(fits) > 1 {
			err := fmt.Errorf("%q names %d tools", name, len(fits))
			return fail(fmt.Sprintf("%q could be any of these tools: %s. Call the one you mean by its name.", name, strings.Join(fits, ", ")), err)
		}
		err := fmt.Errorf("there is no tool %q", name)
		return fail(fmt.Sprintf("There is no tool %q here; the available tools are: %s.", name, s.toolNames()), err)
	}
	e := s.Extension(t.Extension)
	res, err := r.Run(ctx, toolrun.Call{
		Extension: e.Ext, Tool: t.Tool, Args: parsed, Workspace: s.Workspace,
		Timeout: lim.Timeout, MaxOutput: lim.MaxOutput, MemoryBytes: lim.MemoryBytes,
		Settings: e.Settings,
	})
	return worded(t, res, err, parsed)
}

// Resolve returns the tool a model means by name: the tool exposed
// under name; else the one tool whose declared name is name, or whose
// extension's and declared names joined by '_', '.', '/' or ':' are, with
// '-' and '_' counting as the same character. A model writes the
// manifest's own call form (sayHello(name="Ada"), as the extension
// plan's examples do) or the extension's name with a separator of its
// choice, and Codex turns '-' into '_'; a name that can mean one tool
// only is that tool, called with the same arguments. When several tools
// fit, Resolve returns no tool and their exposed names, sorted, for the
// model to choose from; when none does, neither.
func (s *Set) Resolve(name string) (*Tool, []string) {
	if t := s.Tool(name); t != nil {
		return t, nil
	}
	want := foldDash(name)
	var fits []int
	for i := range s.tools {
		t := &s.tools[i]
		forms := []string{t.Name, t.Tool}
		for _, sep := range []string{"_", ".", "/", ":"} {
			forms = append(forms, t.Extension+sep+t.Tool)
		}
		for _, f := range forms {
			if foldDash(f) == want {
				fits = append(fits, i)
				break
			}
		}
	}
	switch len(fits) {
	case 0:
		return nil, nil
	case 1:
		return &s.tools[fits[0]], nil
	}
	names := make([]string, len(fits))
	for i, n := range fits {
		names[i] = s.tools[n].Name
	}
	sort.Strings(names)
	return nil, names
}

// foldDash makes '-' and '_' the same character, for Resolve.
func foldDash(s string) string { return strings.ReplaceAll(s, "-", "_") }

// docOwner reads a read_doc call that named no extension: a name of the
// form EXTENSION/DOC, or the doc (or skill:NAME) of the one extension
// that has it. Several extensions with such a doc are named for the
// model to choose from.
func (s *Set) docOwner(doc string) (string, string, error) {
	if ext, rest, ok := strings.Cut(doc, "/"); ok && s.Extension(ext) != nil {
		return ext, rest, nil
	}
	var owners []string
	for _, d := range s.DocRefs() {
		if d.Name == doc {
			owners = append(owners, d.Extension)
		}
	}
	switch len(owners) {
	case 0:
		return "", "", &DocError{fmt.Sprintf("read_doc was given no extension, and no enabled extension has a doc or skill %q; give the extension's name as in the summary", doc)}
	case 1:
		return owners[0], doc, nil
	}
	return "", "", &DocError{fmt.Sprintf("read_doc was given no extension, and %q is a doc or skill of several: %s; give the extension's name", doc, strings.Join(owners, ", "))}
}

func (s *Set) toolNames() string {
	names := []string{ReadDocTool}
	for _, t := range s.tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func fail(text string, err error) CallResult {
	return CallResult{Text: text, IsError: true, Err: err}
}

// decodeArgs reads a JSON object keeping numbers exact.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// worded turns the runner's outcome into text for a model, which called
// the tool with args.
func worded(t *Tool, res *toolrun.Result, err error, args map[string]any) CallResult {
	cr := CallResult{Result: res, Err: err}
	var b strings.Builder
	var (
		ce *toolrun.ConsentError
		ae *toolrun.ArgError
		te *toolrun.ToolError
	)
	switch {
	case err == nil:
	case errors.As(err, &ce):
		cr.IsError = true
		b.WriteString(consentWords(ce))
	case errors.As(err, &ae):
		cr.IsError = true
		fmt.Fprintf(&b, "The call was not run because its arguments are wrong: %s. Call %s again with arguments that fit its input schema.", propertyWords(ae.Msg, t, args), t.Name)
	case errors.As(err, &te):
		cr.IsError = true
		fmt.Fprintf(&b, "Tool %s %s.", t.Name, te.Msg)
	case errors.Is(err, context.Canceled):
		cr.IsError = true
		fmt.Fprintf(&b, "Tool %s was cancelled and stopped with everything it started.", t.Name)
	default:
		cr.IsError = true
		fmt.Fprintf(&b, "Tool %s could not be run: %v.", t.Name, err)
	}
	if res != nil {
		if len(res.Denied) > 0 {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString("The sandbox blocked, as the extension's permissions do not allow it:")
			for _, d := range res.Denied {
				b.WriteString("\n- " + d.String())
			}
		}
		out := res.Stdout
		if res.Output != nil {
			out = res.Output
		}
		switch {
		case !cr.IsError:
			if b.Len() > 0 {
				b.WriteString("\n\nOutput:\n")
			}
			b.WriteString(validText(out))
			if len(out) == 0 && b.Len() == 0 {
				b.WriteString("(the tool succeeded and printed nothing)")
			}
		case len(out) > 0:
			b.WriteString("\n\nWhat it printed before that:\n" + validText(out))
		}
		if cr.IsError && !strings.Contains(b.String(), strings.TrimSpace(res.Stderr)) {
			b.WriteString("\n\nIts error output:\n" + validText([]byte(res.Stderr)))
		}
	}
	cr.Text = b.String()
	return cr
}

// consentWords is the refusal of a tool whose extension has no consent
// on record, or whose person declined. A client may show it to the person
// as well as to its model, so it speaks to both: what the extension's
// tools may do, that only the person can agree and how, and, for the
// model, that it must neither run the command itself nor call the tool
// again before the person says they agreed. A model that ran the command
// through its shell tool would be deciding for the person; the command
// asks the person to confirm when an agent runs it (gemkit extensions
// consent --help).
func consentWords(ce *toolrun.ConsentError) string {
	perms := strings.Join(ce.Lines, "; ")
	if ce.Declined {
		return fmt.Sprintf("Not run: the person declined to let extension %s run its tools (they may: %s). Do not call its tools again unless the person asks you to.", ce.Extension, perms)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Not run: extension %s needs the person's consent before its tools run, and only the person can give it. Its tools may: %s. ", ce.Extension, perms)
	if ce.Notice != "" {
		// The person should look at these files before agreeing again.
		b.WriteString(ce.Notice + " ")
	}
	fmt.Fprintf(&b, "To agree, the person runs `gemkit extensions consent %s --grant` in a terminal (in Gemini CLI, after ! at its prompt): it shows what they agree to and runs nothing. ", ce.Extension)
	b.WriteString("To the model: tell the person this and wait; do not run that command yourself, and call the tool again only once they say they agreed.")
	return b.String()
}

// propertyWords rewords the runner's message on a call's arguments for a
// model: the runner names an argument as the command-line flag a person
// types (--outside), a model knows it as a property of the tool's input
// schema ("outside"). Every name the tool declares or the call gave is
// rewritten, longest first so that --times is not read as --time.
func propertyWords(msg string, t *Tool, args map[string]any) string {
	names := make([]string, 0, len(args)+len(t.decl.Args))
	for _, a := range t.decl.Args {
		names = append(names, a.Name)
	}
	for n := range args {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) > len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
	})
	pairs := make([]string, 0, 2*len(names))
	for _, n := range names {
		pairs = append(pairs, "--"+n, strconv.Quote(n))
	}
	return strings.NewReplacer(pairs...).Replace(msg)
}

// validText returns out as text; bytes that are not UTF-8 are replaced
// and a note says so, so that a model is never handed mangled output
// without knowing it.
func validText(out []byte) string {
	if utf8.Valid(out) {
		return string(out)
	}
	return strings.ToValidUTF8(string(out), "\uFFFD") +
		"\n(Note: the tool printed bytes that are not valid UTF-8; each run of them is shown as \uFFFD.)"
}
