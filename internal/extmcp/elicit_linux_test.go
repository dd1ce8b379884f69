package extmcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// person is a client's Asker that records each question it is put and
// answers with answer.
type person struct {
	mu     sync.Mutex
	asked  []extmcp.Question
	answer extmcp.Answer
}

func (p *person) ask(_ context.Context, q extmcp.Question) (extmcp.Answer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, q)
	return p.answer, nil
}

func (p *person) questions() []extmcp.Question {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]extmcp.Question(nil), p.asked...)
}

// client is a Client of modes whose person answers accept with content.
func client(name string, modes extmcp.Modes, content string) (extmcp.Client, *person) {
	p := &person{answer: extmcp.Answer{Action: "accept", Content: json.RawMessage(content)}}
	return extmcp.Client{Name: name, Modes: modes, Ask: p.ask}, p
}

// callAs calls tool of sp for c and returns its result's text and
// isError.
func callAs(t *testing.T, m *extmcp.Manager, c extmcp.Client, sp extmcp.Spec, tool string, args any) (string, bool) {
	t.Helper()
	a, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(extmcp.WithClient(context.Background(), c), 2*time.Minute)
	defer cancel()
	raw, err := m.Call(ctx, sp.Key(), tool, a, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	return strings.Join(texts, "\n"), res.IsError
}

// form is the params of a form question.
func form(message string, props map[string]any) map[string]any {
	return map[string]any{"params": map[string]any{"mode": "form", "message": message,
		"requestedSchema": map[string]any{"type": "object", "properties": props}}}
}

// label is the first line gemkit puts above a question of the fixture
// server of the extension realmcp.
const label = `The MCP server "fixture" of the extension "realmcp" asks (its own question, not gemkit's):`

// TestElicitPassedOn: a server's form question during a call goes to the
// client that made the call, in the modes it declared, below a line
// naming the extension and the server; the person's answer goes back to
// the server. The server is told the workspace as its root.
func TestElicitPassedOn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandboxed server: runs without -short, as in CI")
	}
	t.Parallel()
	s := newSetup(t, time.Minute)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	s.m.Sync([]extmcp.Spec{fx})
	c, p := client("claude-code", extmcp.Modes{Form: true}, `{"colour":"green"}`)

	got, isErr := callAs(t, s.m, c, fx, "caps", map[string]any{})
	if isErr || !strings.Contains(got, `"elicitation":{"form":{}}`) || strings.Contains(got, `"url"`) || strings.Contains(got, "sampling") {
		t.Errorf("declared to a server started for a form client: %s", got)
	}
	got, isErr = callAs(t, s.m, c, fx, "ask", form("Which colour?", map[string]any{"colour": map[string]any{"type": "string"}}))
	if isErr || got != `{"action":"accept","content":{"colour":"green"}}` {
		t.Errorf("the server got %s (error %v)", got, isErr)
	}
	asked := p.questions()
	if len(asked) != 1 || asked[0].Message != label+"\nWhich colour?" || asked[0].Mode != "form" || !strings.Contains(string(asked[0].Schema), `"colour"`) {
		t.Errorf("the client was asked %+v", asked)
	}
	if got, _ := callAs(t, s.m, c, fx, "roots", map[string]any{}); !strings.Contains(got, `"uri":"file://`+s.ws+`"`) {
		t.Errorf("roots: %s", got)
	}
}

// TestElicitRefused tests by class, as a server that wants its question
// taken for gemkit's own, or asked of another person, would: each
// question gemkit does not pass on reaches no client, is refused to the
// server in gemkit's words, and the call's result says so.
func TestElicitRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandboxed servers: runs without -short, as in CI")
	}
	t.Parallel()
	s := newSetup(t, time.Minute)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	s.m.Sync([]extmcp.Spec{fx})
	formOnly, fp := client("form-client", extmcp.Modes{Form: true}, `{}`)
	none, np := client("gemini-cli-mcp-client", extmcp.Modes{}, `{}`)
	field := map[string]any{"a": map[string]any{"type": "string"}}
	many := map[string]any{}
	for _, k := range strings.Split("a b c d e f g h i j k l m n o p q", " ") {
		many[k] = map[string]any{"type": "string"}
	}
	// Started for a client that declares none, the server is told of
	// none (nor of sampling).
	if got, _ := callAs(t, s.m, none, fx, "caps", map[string]any{}); !strings.Contains(got, `"declared":{"roots":{}}`) {
		t.Errorf("declared to a server started for a client of none: %s", got)
	}
	url := func(u string) map[string]any {
		return map[string]any{"params": map[string]any{"mode": "url", "message": "Sign in.", "url": u, "elicitationId": "e1"}}
	}
	for _, c := range []struct {
		name string
		as   extmcp.Client
		args any
		why  string
	}{
		{"undeclared", none, form("Which?", field), `the client that made the call (gemini-cli-mcp-client) declares no elicitation`},
		{"long", formOnly, form(strings.Repeat("x", 2001), field), "its question is 2001 characters long, over the 2000"},
		{"fields", formOnly, form("Which?", many), "its form has 17 fields, over the 16"},
		{"big", formOnly, form("Which?", map[string]any{"a": map[string]any{"type": "string", "description": strings.Repeat("d", 9000)}}), "its form is 9"},
		{"escape", formOnly, form("Which?", map[string]any{"a": map[string]any{"type": "string", "title": "\x1b[2Jgemkit"}}), "its form holds control characters"},
		{"url mode", formOnly, url("https://example.com/login"), `the client that made the call (form-client) takes no questions of the "url" mode`},
	} {
		got, _ := callAs(t, s.m, c.as, fx, "ask", c.args)
		if !strings.Contains(got, `gemkit did not pass on the question the extension realmcp's MCP server fixture asked the person: `+c.why) {
			t.Errorf("%s: the call gave %s", c.name, got)
		}
	}
	// A form that is not one (not an object, nested, no mode MCP has)
	// reaches no one either: the SDK or gemkit refuses it.
	for _, params := range []any{
		map[string]any{"mode": "form", "message": "M", "requestedSchema": "x"},
		map[string]any{"mode": "form", "message": "M", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "object"}}}},
		map[string]any{"mode": "consent", "message": "M"},
		"not params",
	} {
		got, _ := callAs(t, s.m, formOnly, fx, "ask", map[string]any{"params": params})
		if !strings.Contains(got, `"code":-326`) {
			t.Errorf("malformed question %v: the call gave %s", params, got)
		}
	}
	if q := append(fp.questions(), np.questions()...); len(q) != 0 {
		t.Errorf("questions reached a client: %+v", q)
	}
}

// TestElicitURL: a URL question goes, labelled with the page's host and
// with gemkit's word that it opens nothing, to a client that declared URL
// mode, which opens it (the sandboxed server cannot); a link of another
// scheme, or one with a user before its host, does not.
func TestElicitURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandboxed server: runs without -short, as in CI")
	}
	t.Parallel()
	s := newSetup(t, time.Minute)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	s.m.Sync([]extmcp.Spec{fx})
	c, p := client("url-client", extmcp.Modes{Form: true, URL: true}, ``)
	ask := func(u string) string {
		got, _ := callAs(t, s.m, c, fx, "ask", map[string]any{"params": map[string]any{"mode": "url", "message": "Sign in to Example.", "url": u, "elicitationId": "sign-in-1"}})
		return got
	}
	if got := ask("https://login.example.com/device?code=1"); got != `{"action":"accept"}` {
		t.Errorf("the server got %s", got)
	}
	asked := p.questions()
	want := `The MCP server "fixture" of the extension "realmcp" asks you to open a page of login.example.com (its own link, not gemkit's; gemkit opens nothing):` + "\nSign in to Example."
	if len(asked) != 1 || asked[0].Message != want || asked[0].URL != "https://login.example.com/device?code=1" || asked[0].ID != "sign-in-1" {
		t.Errorf("the client was asked %+v", asked)
	}
	for u, why := range map[string]string{
		"http://login.example.com/":              `its URL is of "http"`,
		"javascript:alert(1)":                    `its URL is of "javascript"`,
		"https://gemkit.dev@evil.example/":       "its URL has a user or password before its host",
		"https://login.example.com/\u202egnp.js": "characters outside ASCII",
	} {
		if got := ask(u); !strings.Contains(got, "gemkit did not pass on the question") || !strings.Contains(got, why) {
			t.Errorf("%s: the call gave %s", u, got)
		}
	}
	if n := len(p.questions()); n != 1 {
		t.Errorf("%d questions reached the client, want 1", n)
	}
}

// TestElicitNotItsCall: a question asked outside any call (as the
// server starts), or while calls of two clients are under way (the
// question names none, so it could be another session's), reaches no
// client.
func TestElicitNotItsCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandboxed servers: runs without -short, as in CI")
	}
	t.Parallel()
	s := newSetup(t, time.Minute)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fx.Env = map[string]string{"FIXTURE_ASK_AT_START": `{"mode":"form","message":"Extension \"realmcp\" wants to run its tool. Allow?","requestedSchema":{"type":"object","properties":{}}}`}
	s.m.Sync([]extmcp.Spec{fx})
	a, ap := client("a", extmcp.Modes{Form: true}, `{}`)
	b, bp := client("b", extmcp.Modes{Form: true}, `{}`)
	// The server starts for a listing, which it answers once its
	// question at start is answered: no call is under way until then.
	// (A question read after a call began is that call's: the wire names
	// no other owner.)
	if _, failed := s.m.Catalog(context.Background()); len(failed) != 0 {
		t.Fatalf("listing: %v", failed[0].Err)
	}
	got, _ := callAs(t, s.m, a, fx, "caps", map[string]any{})
	if !strings.Contains(got, `it asked while none of its tool calls was under way`) {
		t.Errorf("asked at start, the server got %s", got)
	}

	// b's call hangs while a's asks. The server has it once it counts,
	// of the calls it read, one more than those of the test's own looks.
	calls := func() int {
		got, _ := callAs(t, s.m, a, fx, "seen", map[string]any{})
		return strings.Count(got, "tools/call")
	}
	before := calls()
	hung := make(chan struct{})
	ctx, cancel := context.WithCancel(extmcp.WithClient(context.Background(), b))
	go func() {
		defer close(hung)
		s.m.Call(ctx, fx.Key(), "hang", json.RawMessage(`{}`), nil)
	}()
	looks := 0
	waitFor(t, func() bool {
		looks++
		return calls() >= before+looks+1
	})
	got, _ = callAs(t, s.m, a, fx, "ask", form("Allow?", map[string]any{}))
	cancel()
	<-hung
	if !strings.Contains(got, "it asked while 2 of its requests were under way, and its question names none of them") {
		t.Errorf("asked beside another call, the call gave %s", got)
	}
	if q := append(ap.questions(), bp.questions()...); len(q) != 0 {
		t.Errorf("questions reached a client: %+v", q)
	}
}

// TestElicitUnprivileged runs the tests above as uid 65534.
func TestElicitUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the package's elicitation tests again: runs without -short, as in CI")
	}
	if os.Getuid() == 0 {
		extensionDir(t) // the rerun takes this process's copy
	}
	sandboxtest.RerunUnprivileged(t, "^TestElicit(PassedOn|Refused|URL|NotItsCall)$")
}
