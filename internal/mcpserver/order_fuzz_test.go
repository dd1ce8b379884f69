package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/mcpwire"
)

// A session's message order, fuzzed: the input picks a sequence of
// messages from orderWords (the methods gemkit mcp serves, with valid and
// odd params, and what comes out of order: notifications, answers to
// requests never sent, cancels, lines that are no message), which one
// stdio session (ServeStdio over pipes) of orderServer gets all at once,
// as a client that does not wait for answers writes them. Then:
//   - nothing panics (a panic ends the test binary);
//   - every request with an id gets exactly one answer under that id
//     (one cancelled, or a subscriptions/listen, at most one), and no
//     other line gets one under its id;
//   - a request that must fail fails, and one that must succeed
//     succeeds (orderModel): a request before initialize (but ping), a
//     second initialize, a server/discover after initialize;
//   - the session still answers a ping at the end, and ends when its
//     input does.
//
// The seeds run in every go test (CI's among them); the fuzzing runs by
// hand: go test -run XXX -fuzz FuzzMessageOrder -fuzztime 60s
// ./internal/mcpserver/

// orderWord is one message of the vocabulary: its line, in which ID is
// replaced by the message's own id and PREV by the id of the request
// before it, and what its answer must be.
type orderWord struct {
	name, line string
	want       orderWant
}

// orderWant is what the model expects of a word's answer.
type orderWant int

const (
	wantAny         orderWant = iota // any answer, or none for a notification
	wantResult                       // a result, always
	wantError                        // an error, always
	wantLegacy                       // an error before the session is initialized
	wantInitialize                   // initialize: a result on a session not initialized, else an error
	wantDiscover                     // server/discover with _meta: a result unless the session began with initialize
	wantModern                       // a request of 2026-07-28 (with _meta), which initializes a session that is not
	wantParks                        // subscriptions/listen: answered at most once, when cancelled
	wantModernParks                  // subscriptions/listen of 2026-07-28: as wantParks, and it initializes as wantModern
)

// meta is the _meta of a request of revision 2026-07-28.
const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

var orderWords = []orderWord{
	{"initialize", initWith("ID"), wantInitialize},
	{"initialize-old-elicit", `{"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`, wantInitialize},
	{"initialize-future", `{"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, wantInitialize},
	{"initialize-no-params", `{"jsonrpc":"2.0","id":ID,"method":"initialize"}`, wantError},
	{"initialize-null-params", `{"jsonrpc":"2.0","id":ID,"method":"initialize","params":null}`, wantError},
	{"initialize-array", `{"jsonrpc":"2.0","id":ID,"method":"initialize","params":[1]}`, wantError},
	{"initialize-modern", `{"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` + meta + `}}`, wantError},
	{"initialized", initializedLine, wantAny},
	{"initialized-with-id", `{"jsonrpc":"2.0","id":ID,"method":"notifications/initialized"}`, wantError},
	{"ping", `{"jsonrpc":"2.0","id":ID,"method":"ping"}`, wantResult},
	{"ping-params", `{"jsonrpc":"2.0","id":ID,"method":"ping","params":{}}`, wantResult},
	{"tools/list", `{"jsonrpc":"2.0","id":ID,"method":"tools/list"}`, wantLegacy},
	{"tools/list-params", `{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`, wantLegacy},
	{"tools/list-cursor", `{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"cursor":"x"}}`, wantError},
	{"read_doc", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"read_doc","arguments":{"extension":"e","name":"guide"}}}`, wantLegacy},
	{"read_doc-skill", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"read_doc","arguments":{"extension":"e","name":"skill:triage"},"_meta":{"progressToken":"p"}}}`, wantLegacy},
	{"read_doc-odd", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"read_doc","arguments":"x"}}`, wantLegacy},
	{"call-tool", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"e_t","arguments":{}}}`, wantLegacy},
	{"call-unavailable", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"e_srv_unavailable","arguments":null}}`, wantLegacy},
	{"call-unknown", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"e_srv_nosuch"}}`, wantLegacy},
	{"call-array", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":["read_doc"]}`, wantError},
	{"call-no-params", `{"jsonrpc":"2.0","id":ID,"method":"tools/call"}`, wantError},
	{"resources/list", `{"jsonrpc":"2.0","id":ID,"method":"resources/list"}`, wantLegacy},
	{"resources/read-doc", `{"jsonrpc":"2.0","id":ID,"method":"resources/read","params":{"uri":"gemkit-doc://e/guide"}}`, wantLegacy},
	{"resources/read-server", `{"jsonrpc":"2.0","id":ID,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`, wantLegacy},
	{"resources/templates/list", `{"jsonrpc":"2.0","id":ID,"method":"resources/templates/list","params":{}}`, wantLegacy},
	{"prompts/list", `{"jsonrpc":"2.0","id":ID,"method":"prompts/list"}`, wantLegacy},
	{"prompts/get", `{"jsonrpc":"2.0","id":ID,"method":"prompts/get","params":{"name":"e_nosuch"}}`, wantLegacy},
	{"complete", `{"jsonrpc":"2.0","id":ID,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"e_p"},"argument":{"name":"a","value":"b"}}}`, wantLegacy},
	{"complete-no-ref", `{"jsonrpc":"2.0","id":ID,"method":"completion/complete","params":{"argument":{"name":"a","value":"b"}}}`, wantError},
	{"setLevel", `{"jsonrpc":"2.0","id":ID,"method":"logging/setLevel","params":{"level":"debug"}}`, wantLegacy},
	{"setLevel-odd", `{"jsonrpc":"2.0","id":ID,"method":"logging/setLevel","params":{"level":"loud"}}`, wantLegacy},
	{"subscribe-doc", `{"jsonrpc":"2.0","id":ID,"method":"resources/subscribe","params":{"uri":"gemkit-doc://e/guide"}}`, wantLegacy},
	{"subscribe-server", `{"jsonrpc":"2.0","id":ID,"method":"resources/subscribe","params":{"uri":"x://y"}}`, wantLegacy},
	{"unsubscribe", `{"jsonrpc":"2.0","id":ID,"method":"resources/unsubscribe","params":{"uri":"x://y"}}`, wantLegacy},
	{"listen", `{"jsonrpc":"2.0","id":ID,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, wantParks},
	{"nosuch", `{"jsonrpc":"2.0","id":ID,"method":"tools/nosuch","params":{}}`, wantError},
	{"discover-legacy", `{"jsonrpc":"2.0","id":ID,"method":"server/discover"}`, wantError},
	{"discover", `{"jsonrpc":"2.0","id":ID,"method":"server/discover","params":{` + meta + `}}`, wantDiscover},
	{"modern-list", `{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{` + meta + `}}`, wantModern},
	{"modern-call", `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"read_doc","arguments":{"extension":"e","name":"guide"},` + meta + `}}`, wantModern},
	{"modern-listen", `{"jsonrpc":"2.0","id":ID,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`, wantModernParks},
	{"modern-future", `{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, wantError},
	{"modern-ping", `{"jsonrpc":"2.0","id":ID,"method":"ping","params":{` + meta + `}}`, wantError},
	{"cancel-prev", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":PREV,"reason":"r"}}`, wantAny},
	{"cancel-unknown", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`, wantAny},
	{"cancel-no-params", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`, wantAny},
	{"roots-changed", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, wantAny},
	{"progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`, wantAny},
	{"notification-unknown", `{"jsonrpc":"2.0","method":"notifications/nosuch","params":{}}`, wantAny},
	{"answer-never-asked", `{"jsonrpc":"2.0","id":ID,"result":{}}`, wantAny},
	{"error-never-asked", `{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"no"}}`, wantAny},
	{"method-case", `{"jsonrpc":"2.0","id":ID,"Method":"tools/list","params":{}}`, wantAny},
	{"version-1.0", `{"jsonrpc":"1.0","id":ID,"method":"ping"}`, wantError},
	{"not-json", `hello`, wantAny},
	{"empty-object", `{}`, wantAny},
	{"cut-short", `{"jsonrpc":"2.0","id":ID,"method":"tools/list"`, wantAny},
}

// maxOrderWords bounds the messages of one input.
const maxOrderWords = 48

// orderSeed is the input that picks the words named.
func orderSeed(t testing.TB, names ...string) []byte {
	t.Helper()
	var b []byte
	for _, n := range names {
		i := slices.IndexFunc(orderWords, func(w orderWord) bool { return w.name == n })
		if i < 0 {
			t.Fatalf("no word %q", n)
		}
		b = append(b, byte(i))
	}
	return b
}

func FuzzMessageOrder(f *testing.F) {
	for _, seed := range [][]string{
		// The order that crashed gemkit mcp.
		{"initialize", "initialized", "initialize", "ping"},
		{"tools/list", "read_doc", "setLevel", "subscribe-doc", "initialize", "initialized", "tools/list"},
		{"initialized", "call-unavailable", "initialize", "initialized", "initialized", "call-unavailable"},
		{"initialize", "read_doc", "initialized", "initialize-future", "discover", "discover-legacy"},
		{"discover", "initialize", "modern-list", "tools/list", "discover"},
		{"modern-call", "initialize", "modern-listen", "cancel-prev", "cancel-unknown"},
		{"answer-never-asked", "error-never-asked", "initialize", "listen", "cancel-prev", "cancel-no-params"},
		{"not-json", "initialize-no-params", "initialize-array", "initialize-modern", "initialize", "version-1.0", "cut-short", "method-case"},
		{"initialize", "initialized", "tools/list-cursor", "complete", "complete-no-ref", "prompts/get", "resources/read-server", "unsubscribe"},
	} {
		f.Add(orderSeed(f, seed...))
	}
	s := orderServer(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > maxOrderWords {
			input = input[:maxOrderWords]
		}
		playOrder(t, s, input)
	})
}

// playOrder sends the words input picks to a session of s at once,
// then a ping, and checks the answers (orderModel).
func playOrder(t *testing.T, s *Server, input []byte) {
	m := newOrderModel()
	var send []string
	for i, b := range input {
		send = append(send, m.add(orderWords[int(b)%len(orderWords)], i))
	}
	r := serveStdio(t, s)
	// Written beside the reading, as a client does: the server may write
	// more than a pipe holds before it reads on. (A pipe's writes do not
	// interleave.)
	var writing sync.WaitGroup
	write := func(s string) { writing.Go(func() { io.WriteString(r.in, s) }) }
	write(strings.Join(send, "\n") + "\n" + `{"jsonrpc":"2.0","id":"end","method":"ping"}` + "\n")
	m.expect(`"end"`, wantResult, true)
	answers := map[string][]wireAnswer{}
	deadline := time.After(time.Minute)
	for !m.answered(answers) {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("the session ended before every request was answered; sent:\n%s", strings.Join(send, "\n"))
			}
			m.take(answers, l)
			// A request of the server's (elicitation/create, when the
			// client said it elicits) is answered, as a client does,
			// with an error.
			if a := readAnswer(l); a.Method != "" && len(a.ID) > 0 {
				write(`{"jsonrpc":"2.0","id":` + string(a.ID) + `,"error":{"code":-32601,"message":"the test's client answers no request"}}` + "\n")
			}
		case <-deadline:
			t.Fatalf("no answer within a minute to %v; sent:\n%s", m.missing(answers), strings.Join(send, "\n"))
		}
	}
	writing.Wait()
	rest, err := r.close()
	for _, l := range rest {
		m.take(answers, l)
	}
	if err != nil {
		t.Errorf("the session ended with %v", err)
	}
	for _, p := range m.check(answers) {
		t.Errorf("%s; sent:\n%s", p, strings.Join(send, "\n"))
	}
}

// orderModel is what a sequence of words must be answered with: it
// follows the session's state as the SDK does, message by message.
type orderModel struct {
	legacy  bool // a valid initialize came (the session began with it)
	started bool // the session is initialized: by initialize, or by a request of 2026-07-28
	// unsure: a request that would have moved the state on was
	// cancelled, which may have kept it from being handled at all: the
	// state is not known from there on.
	unsure  bool
	lastReq string
	moved   map[string]bool // the requests that moved the state on, by id
	// want is the expected answer by id (canonID); once says whether
	// exactly one must come (else at most one).
	want map[string]orderWant
	once map[string]bool
	name map[string]string
}

func newOrderModel() *orderModel {
	return &orderModel{want: map[string]orderWant{}, once: map[string]bool{}, name: map[string]string{}, moved: map[string]bool{}}
}

// add returns the line of word w as the i-th message, and notes what
// its answer must be.
func (m *orderModel) add(w orderWord, i int) string {
	// Ids of both kinds, some with characters JSON escapes.
	id := strconv.Itoa(i + 1)
	switch i % 3 {
	case 1:
		id = fmt.Sprintf(`"r%d"`, i+1)
	case 2:
		id = fmt.Sprintf(`"\u00e9<%d>\"q\""`, i+1)
	}
	prev := m.lastReq
	if prev == "" {
		prev = "424242"
	}
	line := strings.NewReplacer("ID", id, "PREV", prev).Replace(w.line)
	msg, err := mcpwire.Read([]byte(line))
	switch {
	case err == nil && msg.HasID() && msg.HasMethod:
		before := [2]bool{m.legacy, m.started}
		want := m.step(w.want)
		m.expect(id, want, w.want != wantParks && w.want != wantModernParks)
		m.name[canonID([]byte(id))] = w.name
		m.moved[canonID([]byte(id))] = before != [2]bool{m.legacy, m.started}
		m.lastReq = id
	case err == nil && msg.Is("notifications/cancelled") && w.name == "cancel-prev" && m.lastReq != "":
		// A request cancelled is answered at most once, with a result
		// or an error.
		c := canonID([]byte(m.lastReq))
		m.once[c], m.want[c] = false, wantAny
		m.unsure = m.unsure || m.moved[c]
	case err == nil && msg.HasID():
		// No request: nothing answers it more than once.
		m.expect(id, wantAny, false)
	}
	return line
}

// step is the answer a request of want gets in the session's state
// now, and moves the state on, as the SDK's handling of it does.
func (m *orderModel) step(want orderWant) orderWant {
	if m.unsure {
		m.started, m.legacy = true, m.legacy || want == wantInitialize
		if want != wantResult && want != wantError {
			return wantAny
		}
		return want
	}
	switch want {
	case wantLegacy:
		if !m.started {
			return wantError
		}
		return wantAny
	case wantInitialize:
		if m.started {
			return wantError
		}
		m.started, m.legacy = true, true
		return wantResult
	case wantDiscover:
		if m.legacy {
			return wantError
		}
		m.started = true
		return wantResult
	case wantModern, wantModernParks:
		m.started = true
		return wantAny
	case wantParks:
		return wantAny
	}
	return want
}

func (m *orderModel) expect(id string, want orderWant, once bool) {
	m.want[canonID([]byte(id))] = want
	m.once[canonID([]byte(id))] = once
}

// take notes line, if it is an answer.
func (m *orderModel) take(answers map[string][]wireAnswer, line string) {
	a := readAnswer(line)
	if a.Method != "" || len(a.ID) == 0 || string(a.ID) == "null" {
		return // the server's own notification or request, or an answer to a line that is no message
	}
	id := canonID(a.ID)
	answers[id] = append(answers[id], a)
}

// answered reports whether every request that must be answered was.
func (m *orderModel) answered(answers map[string][]wireAnswer) bool {
	return len(m.missing(answers)) == 0
}

func (m *orderModel) missing(answers map[string][]wireAnswer) []string {
	var out []string
	for id, once := range m.once {
		if once && len(answers[id]) == 0 {
			out = append(out, id+" ("+m.name[id]+")")
		}
	}
	slices.Sort(out)
	return out
}

// check is what is wrong with answers.
func (m *orderModel) check(answers map[string][]wireAnswer) []string {
	var out []string
	for id, as := range answers {
		want, ok := m.want[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("an answer under id %s, which no line sent had", id))
			continue
		case len(as) > 1:
			out = append(out, fmt.Sprintf("%d answers to %s (%s)", len(as), id, m.name[id]))
		}
		a := as[0]
		switch {
		case want == wantResult && (a.Error != nil || a.Result == nil):
			out = append(out, fmt.Sprintf("%s (%s) answered %+v, want a result", id, m.name[id], a.Error))
		case want == wantError && a.Error == nil:
			out = append(out, fmt.Sprintf("%s (%s) answered %s, want an error", id, m.name[id], a.Result))
		}
	}
	slices.Sort(out)
	return out
}

// canonID is an id as one text whichever way its JSON was written (the
// SDK writes a string's escapes its own way).
func canonID(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
