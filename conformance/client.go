package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
)

// connect dials the endpoint as the real CLI does, watching every
// notification; the client checks that follow use the client. Dialling
// and the wait for the context share one 15 s budget.
func (e *env) connect() verdict {
	e.seen = &notes{}
	co := e.o.Client
	co.Observe = e.seen.add
	e.cctx, e.cancel = context.WithTimeout(e.ctx, 15*time.Second)
	c, err := client.Dial(e.cctx, e.ep, co)
	if err != nil {
		return failf("%v", err).last()
	}
	e.c = c
	return passf("%s %s", c.Server().Name, c.Server().Version)
}

func (e *env) diffing() verdict {
	if !e.c.DiffingEnabled() {
		return failf("tools: %v", toolNames(e.c.Tools())).last()
	}
	return passf("")
}

// receivesContext waits up to 3 s for the editor's context; over stdio a
// companion need not send one at once, and no line is added.
func (e *env) receivesContext() verdict {
	c := e.c
	wctx, wcancel := context.WithTimeout(e.cctx, 3*time.Second)
	go func() {
		// A refused stream means no context will come: stop waiting.
		for wctx.Err() == nil && c.NotificationStream() {
			time.Sleep(20 * time.Millisecond)
		}
		wcancel()
	}()
	_, err := c.WaitContext(wctx)
	wcancel()
	switch {
	case !c.NotificationStream():
		return failf("the companion refused the GET stream (405): no context, and diffs never resolve")
	case err != nil && e.ep.Transport == client.TransportHTTP:
		return failf("no ide/contextUpdate within 3 s: %v", err)
	case err == nil:
		return passf("")
	}
	return verdict{}
}

// probe is a file of the workspace that does not exist, for a diff.
func (e *env) probe() string {
	dir := e.plan.Cwd
	if e.plan.WorkspacePath != nil {
		for _, f := range strings.Split(*e.plan.WorkspacePath, string(os.PathListSeparator)) {
			if f != "" {
				dir = f
				break
			}
		}
	}
	return filepath.Join(dir, ide.CheckProbePrefix+randomHex()+".txt")
}

// closeNone closes the diff of a file without one.
func (e *env) closeNone() verdict {
	sctx, cancel := context.WithTimeout(e.ctx, stepTimeout)
	text, err := e.c.CloseDiffText(sctx, e.probe())
	cancel()
	if err != nil {
		return failf("%v", stepErr(err))
	}
	if _, ok, perr := client.ParseCloseDiffText(text); perr != nil {
		return failf("%v", perr)
	} else if ok {
		return failf("content returned for a file with no diff: %.80s", *text)
	}
	return passf("")
}

// openClose opens a diff, then closes it from the CLI side: the proposal
// comes back and no accept or reject notification is sent.
func (e *env) openClose() verdict {
	path := e.probe()
	proposal := "gemkit ide check\nproposal " + randomHex() + "\n"
	sctx, cancel := context.WithTimeout(e.ctx, stepTimeout)
	defer cancel()
	d, err := e.c.StartDiff(sctx, path, proposal)
	if err != nil {
		return failf("%v", stepErr(err))
	}
	text, err := e.c.CloseDiffText(sctx, path)
	var content string
	var ok bool
	if err == nil {
		content, ok, err = client.ParseCloseDiffText(text)
	}
	time.Sleep(e.o.Settle)
	d.Abandon()
	extra := e.seen.about(path)
	switch {
	case err != nil:
		return failf("closeDiff: %v", stepErr(err))
	case !ok:
		return failf("closeDiff says no diff was open (text %.80q)", deref(text))
	case content != proposal:
		return failf("closeDiff returned %.80q, not the proposal", content)
	case len(extra) > 0:
		return failf("closeDiff also sent %s: the real CLI resolves the diff itself and the notification races it", extra[0].method)
	}
	return passf("")
}

// accept asks the person to accept a diff in the editor (--interactive).
func (e *env) accept() verdict {
	path, out, v := e.answer(true)
	if v != nil {
		return *v
	}
	probs := []string{}
	for _, n := range e.seen.about(path) {
		if n.method == ide.MethodDiffAccepted {
			probs = append(probs, DiffNotificationProblems(n.params, true)...)
		}
	}
	if len(probs) > 0 {
		return failf("%s", strings.Join(probs, "; "))
	}
	return passf("final text %d bytes", len(out.Content))
}

// reject asks the person to reject a diff in the editor (--interactive).
func (e *env) reject() verdict {
	path, _, v := e.answer(false)
	if v != nil {
		return *v
	}
	for _, n := range e.seen.about(path) {
		if n.method == ide.MethodDiffClosed {
			return warnf("the companion sent the legacy ide/diffClosed; current clients expect ide/diffRejected")
		}
	}
	return passf("")
}

// answer shows a diff in the editor and asks the person to accept it or
// to reject it (--interactive). It returns the diff's path and how it
// ended, or the verdict when the check cannot pass: not interactive, no
// answer, or the other answer.
func (e *env) answer(accept bool) (string, client.DiffOutcome, *verdict) {
	if !e.o.Interactive {
		v := skipf("run with --interactive")
		return "", client.DiffOutcome{}, &v
	}
	content, ask, other := "gemkit ide check: reject me\n", "REJECT it there (or close its tab).", "accepted; reject"
	if accept {
		content, ask, other = "gemkit ide check: accept me\n", "ACCEPT it there (you may edit the right side first).", "rejected; accept"
	}
	path := e.probe()
	actx, cancel := context.WithTimeout(e.ctx, e.o.AnswerTimeout)
	out, err := askInEditor(actx, e.c, path, content, e.o.Out, ask)
	cancel()
	switch {
	case err != nil:
		v := failf("%v", err)
		return path, out, &v
	case out.Accepted != accept:
		v := failf("the diff was %s it to pass this check", other)
		return path, out, &v
	}
	return path, out, nil
}

// notes collects the notifications the client sees during the diff checks.
type notes struct {
	mu   sync.Mutex
	list []note
}

type note struct {
	method string
	params json.RawMessage
}

func (n *notes) add(method string, params json.RawMessage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, note{method, params})
}

// about returns the diff notifications about path.
func (n *notes) about(path string) []note {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []note
	for _, x := range n.list {
		if x.method == ide.MethodContextUpdate {
			continue
		}
		var p struct {
			FilePath string `json:"filePath"`
		}
		if json.Unmarshal(x.params, &p) == nil && p.FilePath == path {
			out = append(out, x)
		}
	}
	return out
}

// askInEditor shows a diff and, once the companion says it is shown, asks
// the person to answer it; then it waits for the answer.
func askInEditor(ctx context.Context, c *client.Client, path, proposal string, out io.Writer, ask string) (client.DiffOutcome, error) {
	d, err := c.StartDiff(ctx, path, proposal)
	if err != nil {
		return client.DiffOutcome{}, err
	}
	fmt.Fprintf(out, "\nA diff of %s is open in your editor.\n%s\n", path, ask)
	return d.Wait(ctx)
}

// stepTimeout bounds each diff call of a check.
const stepTimeout = 10 * time.Second

// stepErr explains a diff call that ran out of time.
func stepErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: does the companion's editor answer? (%w)", stepTimeout, err)
	}
	return err
}

func toolNames(ts []client.Tool) []string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return "<no text block>"
	}
	return *s
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
