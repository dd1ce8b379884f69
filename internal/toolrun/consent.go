package toolrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
)

// ConsentStore keeps the person's consent to an extension's permissions
// (extension.Terms.Hash) and to its files (extension.Content): a tool
// whose permissions or code changed since the person agreed is shown and
// asked about again. *extension.Store is one.
type ConsentStore interface {
	// ConsentContent returns what the person agreed to for name under
	// hash (an empty Digest for a record older than content binding).
	ConsentContent(name, hash string) (agreed extension.Content, granted bool)
	// AgreedBefore returns the files the person agreed to for name
	// under whatever permissions, and whether they agreed at all: a
	// question after the permissions changed says so.
	AgreedBefore(name string) (agreed extension.Content, ok bool)
	RecordConsentContent(name, hash string, c extension.Content) error
	// ReadContent reads an extension's folder as consent binds to it
	// (extension.ReadContent), at every run: *extension.Store's reads
	// through its digest cache, so that unchanged files are not hashed
	// again.
	ReadContent(dir string) (extension.Content, error)
}

// ConsentRequest is what the person is asked before an extension's tools
// run.
type ConsentRequest struct {
	Extension string
	// Notice says why consent given before does not hold any more: the
	// files that changed since (extension.ContentNotice); "" when there
	// was none to hold. It is a statement of its own, to be shown before
	// Lines and apart from them, not one of the permissions.
	Notice string
	// Lines are the permissions in words (extension.Terms.Lines).
	Lines []string
}

// Question is q as one question to show: "Extension "x" wants to run
// what.", the Notice as a paragraph of its own (blank lines around it when
// gap is "\n\n", where Markdown would join lines), then the permissions,
// each behind bullet. Every part the extension wrote is made printable.
func (q ConsentRequest) Question(what, gap, bullet string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Extension %q wants to run %s.", extension.Printable(q.Extension), what)
	if q.Notice != "" {
		b.WriteString(gap + extension.Printable(q.Notice) + gap)
	} else {
		b.WriteString(" ")
	}
	b.WriteString("Its tools may:\n")
	for _, l := range q.Lines {
		b.WriteString(bullet + extension.Printable(l) + "\n")
	}
	return b.String()
}

// Answer is the person's answer to a ConsentRequest.
type Answer int

const (
	// Decline: the tool does not run.
	Decline Answer = iota
	// AllowOnce: this run goes ahead and nothing is recorded; the next
	// run asks again.
	AllowOnce
	// AllowAlways: the run goes ahead and the consent is recorded until
	// the permissions or the files change.
	AllowAlways
)

// AllowIf is the answer of a yes/no question: AllowAlways for yes.
func AllowIf(yes bool) Answer {
	if yes {
		return AllowAlways
	}
	return Decline
}

// Asker asks the person whether the extension may run with the
// permissions q describes. It returns an error when it cannot ask:
// ErrNobodyAsked when nobody can answer this time, which refuses the run
// as having no Asker does.
type Asker func(ctx context.Context, q ConsentRequest) (Answer, error)

// ErrNobodyAsked is an Asker's error when nobody can answer the question
// this time (an MCP client that has not been asked yet).
var ErrNobodyAsked = errors.New("nobody can be asked")

// ConsentError is a run refused because the person has not agreed to the
// extension's permissions and could not be asked, or declined.
type ConsentError struct {
	Extension string
	// Notice is ConsentRequest.Notice: why consent given before does not
	// hold, "" when there was none.
	Notice   string
	Lines    []string
	Declined bool
	// Agree is the command that records consent outside a call
	// (Runner.AgreeCommand), "" when the runner names none.
	Agree string
}

func (e *ConsentError) Error() string {
	perms := strings.Join(e.Lines, "; ")
	switch {
	case e.Declined:
		return fmt.Sprintf("you declined to let extension %s run with these permissions: %s", e.Extension, perms)
	case e.Notice != "":
		return fmt.Sprintf("extension %s needs your consent again before its tools run, and there is no terminal to ask on. %s Its tools may: %s",
			e.Extension, e.Notice, perms)
	}
	return fmt.Sprintf("extension %s needs your consent before its tools run (it may: %s), and there is no terminal to ask on",
		e.Extension, perms)
}

// agreeCommand is r.AgreeCommand for the extension name, or "".
func (r *Runner) agreeCommand(name string) string {
	if r.AgreeCommand == nil {
		return ""
	}
	return r.AgreeCommand(name)
}

// checkConsent finds, records or asks for the person's consent to the
// extension's terms, tied to their hash and, where there is a store, to
// the extension's files. Files consent cannot bind (another name on
// disk, a link into writable, Content.Bindable) refuse the run before
// anyone is asked.
func (r *Runner) checkConsent(ctx context.Context, ext *extension.Extension, terms extension.Terms, grant bool, writable []string) error {
	name := ext.Manifest.Name
	q := ConsentRequest{Extension: name, Lines: terms.Lines}
	var now extension.Content
	if r.Consent != nil {
		var err error
		if now, err = r.Consent.ReadContent(ext.Dir); err != nil {
			return err
		}
		if err := now.Bindable(ext.Dir, writable); err != nil {
			return err
		}
		if agreed, granted := r.Consent.ConsentContent(name, terms.Hash); granted {
			if agreed.Digest == now.Digest {
				return nil
			}
			q.Notice = extension.ContentNotice(agreed, now, ext.Dir)
		} else if before, ok := r.Consent.AgreedBefore(name); ok {
			q.Notice = permissionsNotice(before, now, ext.Dir)
		}
	}
	answer, err := r.answer(ctx, q, grant)
	if err != nil {
		return err
	}
	if answer != AllowAlways || r.Consent == nil {
		return nil
	}
	if err := r.Consent.RecordConsentContent(name, terms.Hash, now); err != nil {
		return fmt.Errorf("recording consent: %w", err)
	}
	return nil
}

// permissionsNotice is the Notice of a question asked because the
// extension's permissions changed since the person agreed to it (before
// are the files they agreed to then): that they did, so that the new
// permissions are read as new, and the files changed since, the
// manifest among them.
func permissionsNotice(before, now extension.Content, dir string) string {
	s := "You agreed to other permissions for this extension before: what its tools may do has changed."
	if before.Digest != "" && now.Digest != "" && before.Digest != now.Digest {
		s += " " + extension.ContentNotice(before, now, dir)
	}
	return s
}

// answer is the person's answer to q: given on the command line (grant),
// else asked; with nobody to ask, or a no, the run is refused.
func (r *Runner) answer(ctx context.Context, q ConsentRequest, grant bool) (Answer, error) {
	refused := &ConsentError{Extension: q.Extension, Notice: q.Notice, Lines: q.Lines, Agree: r.agreeCommand(q.Extension)}
	switch {
	case grant:
		return AllowAlways, nil
	case r.Ask == nil:
		return Decline, refused
	}
	answer, err := r.Ask(ctx, q)
	if errors.Is(err, ErrNobodyAsked) {
		return Decline, refused
	}
	if err != nil {
		return Decline, err
	}
	if answer == Decline {
		refused.Declined = true
		return Decline, refused
	}
	return answer, nil
}

// boundOutside are the folders a link out of an extension's folder must
// not lead into for consent to bind what it names: those some tool may
// write (the run's workspace, the home folder when an installed
// extension may write it) and the temporary folders every program may.
func boundOutside(pol permission.Resolved) []string {
	return append(append([]string(nil), pol.Untrusted...), SharedTemp()...)
}

// SharedTemp are the temporary folders every program may write, by
// their names and their real paths: a link out of an extension's folder
// into one names code that consent does not bind.
func SharedTemp() []string {
	var out []string
	for _, d := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"} {
		out = append(out, d)
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			out = append(out, r)
		}
	}
	return out
}
