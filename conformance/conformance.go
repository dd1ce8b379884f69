// Package conformance checks that a Gemini CLI IDE companion works with the
// real CLI ([IdeClient] in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts and the official companion's
// gemini-cli 0.61.0 [ide-server.ts] in packages/vscode-ide-companion), as
// the [companion spec] asks and the real CLI needs: its discovery file, its
// HTTP guard (token, Host, Origin), its [MCP] session over [Streamable
// HTTP], tools and notifications, and its diff tools. Each check passes or
// fails with a reason a companion's author can act on: [Run] gives a
// [Report] of [Result] values.
//
// The checks are tables (checks.go), run in order: the discovery file
// (discoveryChecks, or qwenDiscoveryChecks for Qwen Code's lock file), the
// HTTP guard and the raw MCP exchange (httpChecks, http.go), then a
// client's view of the companion and its diffs (clientChecks, client.go,
// through [client]). Their IDs are stable:
// `gemkit ide check --json` reports them. [ContextProblems] and
// [DiffNotificationProblems] check one notification against the real
// client's schemas.
//
// [IdeClient]: https://github.com/google-gemini/gemini-cli/tree/v0.61.0/packages/core/src/ide/ide-client.ts
// [ide-server.ts]: https://github.com/google-gemini/gemini-cli/tree/v0.61.0/packages/vscode-ide-companion/src/ide-server.ts
// [companion spec]: https://geminicli.com/docs/ide-integration/ide-companion-spec
// [MCP]: https://modelcontextprotocol.io/specification/2025-06-18
// [Streamable HTTP]: https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http
package conformance

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
)

// Outcome of one check.
type Outcome string

// Outcomes.
const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	Warn Outcome = "warn"
	Skip Outcome = "skip"
)

// Result is one check's outcome.
type Result struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

// Report is a whole run.
type Report struct {
	// File is the discovery file checked, Endpoint how it was reached.
	File     string   `json:"file,omitempty"`
	Endpoint string   `json:"endpoint,omitempty"`
	Results  []Result `json:"results"`
}

// Failed counts the failed checks.
func (r *Report) Failed() int {
	n := 0
	for _, x := range r.Results {
		if x.Outcome == Fail {
			n++
		}
	}
	return n
}

// Get returns the result of check id, if it ran.
func (r *Report) Get(id string) (Result, bool) {
	for _, x := range r.Results {
		if x.ID == id {
			return x, true
		}
	}
	return Result{}, false
}

// Options configure Run.
type Options struct {
	// Client finds and reaches the companion as the CLI would.
	Client client.Options
	// Interactive adds the accept and reject round trips, in which the
	// person answers diffs in the editor; Out receives the instructions.
	Interactive bool
	Out         io.Writer
	// AnswerTimeout bounds each interactive answer; default 5 minutes.
	AnswerTimeout time.Duration
	// Settle is how long to watch for notifications that must not come;
	// default 300 ms.
	Settle time.Duration
}

// Run checks the companion the CLI would pick from the options' directory.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.AnswerTimeout == 0 {
		o.AnswerTimeout = 5 * time.Minute
	}
	if o.Settle == 0 {
		o.Settle = 300 * time.Millisecond
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	plan, err := client.Discover(ctx, o.Client)
	if err != nil {
		return nil, err
	}
	e := &env{ctx: ctx, o: o, plan: plan, r: &Report{}}
	defer e.closeClient()
	if plan.Agent == client.AgentQwen {
		e.run(qwenDiscoveryChecks)
	} else {
		e.run(discoveryChecks)
	}
	ep := e.endpoint()
	if ep == nil {
		return e.r, nil
	}
	e.ep = *ep
	e.r.Endpoint = ep.String()
	if ep.Transport == client.TransportHTTP {
		e.checkHTTP()
	} else {
		e.report(httpCheck, skipf("the companion is reached over stdio"))
	}
	e.run(clientChecks)
	return e.r, nil
}

// env is what the checks of one run share: the plan and endpoint, and
// what earlier checks got for later ones.
type env struct {
	ctx  context.Context
	o    Options
	plan *client.Plan
	ep   client.Endpoint
	r    *Report

	disc chosenFile // the discovery checks'

	// The HTTP checks' (http.go): what the CLI asks for at initialize,
	// the budget of the MCP exchange, the protocol the companion chose
	// and the session's headers.
	h            rawHTTP
	proto        protocol
	mcpCtx       context.Context
	protoVersion string
	sess         map[string]string

	// The client checks' (client.go): the client, its budget and the
	// notifications it saw.
	c      *client.Client
	cctx   context.Context
	cancel context.CancelFunc
	seen   *notes
}

// run runs a table of checks in order, until one stops it.
func (e *env) run(checks []check) {
	for _, c := range checks {
		v := c.run(e)
		e.report(c, v)
		if v.stop {
			return
		}
	}
}

// report adds c's verdict to the report; a verdict with no outcome adds
// nothing.
func (e *env) report(c check, v verdict) {
	if v.outcome != "" {
		e.r.Results = append(e.r.Results, Result{ID: c.id, Title: c.title, Outcome: v.outcome, Detail: v.detail})
	}
}

// endpoint is the first endpoint the CLI would reach, or nil (reported).
func (e *env) endpoint() *client.Endpoint {
	eps := e.plan.Endpoints
	for i := range eps {
		ep := &eps[i]
		if ep.Transport == client.TransportHTTP && (ep.Port < 1 || ep.Port > 65535) {
			continue
		}
		// An address the CLI cannot reach (inside a container Gemini CLI
		// dials host.docker.internal) sends it on to the next endpoint,
		// as a discovery file's stdio bridge expects: the checks follow.
		if ep.Transport == client.TransportHTTP && i+1 < len(eps) {
			if err := reach(e.ctx, *ep); err != nil {
				next := eps[i+1]
				v := warnf("%s cannot be reached (%v); the CLI goes on to %s", ep.URL(), err, next)
				if next.Transport == client.TransportStdio && next.Source == ep.Source {
					v.outcome = Pass
				}
				e.report(fallbackCheck, v)
				continue
			}
		}
		return ep
	}
	if e.plan.Agent == client.AgentQwen {
		e.report(connectCheck, failf("neither a lock file nor %s/%s names a port or a stdio command", ide.EnvQwenServerPort, ide.EnvQwenServerStdioCmd))
	} else {
		e.report(connectCheck, failf("neither a discovery file nor %s/%s names a port or a stdio command", ide.EnvServerPort, ide.EnvServerStdioCmd))
	}
	return nil
}

// reach dials an HTTP endpoint's address.
func reach(ctx context.Context, e client.Endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
	if err != nil {
		return err
	}
	return c.Close()
}

// closeClient closes the client the client checks connected, if any.
func (e *env) closeClient() {
	if e.c != nil {
		e.c.Close(context.Background())
	}
	if e.cancel != nil {
		e.cancel()
	}
}

// check is one line of the report: a stable ID, what it checks, and how.
type check struct {
	id, title string
	run       func(*env) verdict
}

// verdict is what a check found. A zero outcome adds no line; stop ends
// the checks after it in its table, which need what it did not get.
type verdict struct {
	outcome Outcome
	detail  string
	stop    bool
}

func passf(format string, args ...any) verdict {
	return verdict{outcome: Pass, detail: sprintf(format, args)}
}
func failf(format string, args ...any) verdict {
	return verdict{outcome: Fail, detail: sprintf(format, args)}
}
func warnf(format string, args ...any) verdict {
	return verdict{outcome: Warn, detail: sprintf(format, args)}
}
func skipf(format string, args ...any) verdict {
	return verdict{outcome: Skip, detail: sprintf(format, args)}
}

// last makes v the last verdict of its table.
func (v verdict) last() verdict {
	v.stop = true
	return v
}

func sprintf(format string, args []any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}
