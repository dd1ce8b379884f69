package model

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestReadSSE(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"lf", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}},
		{"multi-line", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"comments and fields", ": ping\nevent: message\nid: 3\ndata:x\n\n", []string{"x"}},
		{"no final blank line", "data: last", []string{"last"}},
		{"empty", "", nil},
		{"blank lines only", "\n\n\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			err := readSSE(strings.NewReader(c.in), func(d []byte) error { got = append(got, string(d)); return nil })
			if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
	big := "data: " + strings.Repeat("x", maxEvent+1) + "\n\n"
	if err := readSSE(strings.NewReader(big), func([]byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Fatalf("an oversized event: %v", err)
	}
	stop := errors.New("stop")
	if err := readSSE(strings.NewReader("data: a\n\ndata: b\n\n"), func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("the callback's error: %v", err)
	}
}

// wireServer answers every request with status and body, recording the
// last request.
type wireServer struct {
	*httptest.Server
	path, query, key, body string
}

func newWireServer(t *testing.T, status int, contentType, reply string) *wireServer {
	t.Helper()
	w := &wireServer{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.path, w.query, w.key, w.body = r.URL.Path, r.URL.RawQuery, r.Header.Get("x-goog-api-key"), string(b)
		rw.Header().Set("Content-Type", contentType)
		rw.WriteHeader(status)
		io.WriteString(rw, reply)
	}))
	t.Cleanup(w.Close)
	return w
}

func TestGeminiWire(t *testing.T) {
	stream := "data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking…","thought":true},{"text":"Hel"}]}}]}` + "\r\n\r\n" +
		"data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"},{"functionCall":{"name":"read","args":{"path":"a.go"}}},{"functionCall":{"id":"x9","name":"ls"},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],"usageMetadata":{"candidatesTokenCount":7}}` + "\r\n\r\n"
	srv := newWireServer(t, 200, "text/event-stream", stream)
	m, err := NewGemini(context.Background(), GeminiConfig{Model: "gemini-x", APIKey: "k1", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	r, err := m.Generate(context.Background(), Request{
		System: "be brief",
		Messages: []Message{
			{Role: User, Text: "hi"},
			{Role: Assistant, Calls: []Call{{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"b"}`), Signature: "c2lnMQ=="}, {Name: "bad", Args: json.RawMessage(`"x"`)}}},
			{Role: Tool, Results: []Result{{CallID: "c1", Name: "read", Text: "body"}, {Name: "bad", Text: "no", IsError: true}}},
		},
		Tools:           []ToolDecl{{Name: "read", Description: "reads", Schema: map[string]any{"type": "object"}}},
		MaxOutputTokens: 50,
	}, func(s string) { streamed.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "Hello" || streamed.String() != "Hello" || r.Finish != FinishStop || r.OutputTokens != 7 {
		t.Errorf("reply %+v, streamed %q", r, streamed.String())
	}
	if len(r.Calls) != 2 || r.Calls[0].ID != "gemkit-call-1" || string(r.Calls[0].Args) != `{"path":"a.go"}` || r.Calls[1].ID != "x9" || string(r.Calls[1].Args) != "{}" || r.Calls[1].Signature != "c2ln" {
		t.Errorf("calls %+v", r.Calls)
	}
	if srv.path != "/v1beta/models/gemini-x:streamGenerateContent" || srv.query != "alt=sse" || srv.key != "k1" {
		t.Errorf("request %s?%s key %q", srv.path, srv.query, srv.key)
	}
	for _, want := range []string{
		`"systemInstruction":{"parts":[{"text":"be brief"}]}`,
		`{"thoughtSignature":"c2lnMQ==","functionCall":{"id":"c1","name":"read","args":{"path":"b"}}}`,
		`"functionCall":{"name":"bad","args":{}}`,
		`"functionResponse":{"id":"c1","name":"read","response":{"output":"body"}}`,
		`"functionResponse":{"name":"bad","response":{"error":"no"}}`,
		`"functionDeclarations":[{"name":"read","description":"reads","parametersJsonSchema":{"type":"object"}}]`,
		`"generationConfig":{"maxOutputTokens":50}`,
		`{"role":"model","parts":[`,
	} {
		if !strings.Contains(srv.body, want) {
			t.Errorf("request body lacks %s:\n%s", want, srv.body)
		}
	}
}

func TestGeminiErrors(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		kind        Kind
		words       string
	}{
		{"quota", 429, "application/json", `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`, KindQuota, "RESOURCE_EXHAUSTED Resource has been exhausted"},
		{"bad key in a list", 400, "application/json", `[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]`, KindAuth, "API key not valid"},
		{"not found", 404, "application/json", `{"error":{"code":404,"message":"models/nope is not found","status":"NOT_FOUND"}}`, KindNotFound, "models/nope"},
		{"plain text", 503, "text/plain", "upstream connect error", KindServer, "upstream connect error"},
		{"error in the stream", 200, "text/event-stream", "data: {\"error\":{\"code\":500,\"message\":\"internal\",\"status\":\"INTERNAL\"}}\n\n", KindServer, "INTERNAL internal"},
		{"blocked prompt", 200, "text/event-stream", "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\n\n", KindSafety, "the prompt was blocked: SAFETY"},
		{"unsafe finish", 200, "text/event-stream", "data: {\"candidates\":[{\"finishReason\":\"SAFETY\"}]}\n\n", KindSafety, "finish reason SAFETY"},
		{"not JSON", 200, "text/event-stream", "data: <html>\n\n", KindServer, "not JSON: <html>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newWireServer(t, c.status, c.contentType, c.body)
			m, err := NewGemini(context.Background(), GeminiConfig{Model: "m", APIKey: "k", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Generate(context.Background(), Request{Messages: []Message{{Role: User, Text: "hi"}}}, nil)
			var e *Error
			if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("got %v (%T), want kind %s with %q", err, err, c.kind, c.words)
			}
		})
	}
	// A refused connection is a network error, and a cancelled call is
	// the context's error.
	srv := newWireServer(t, 200, "text/event-stream", "")
	url := srv.URL
	srv.Close()
	m, _ := NewGemini(context.Background(), GeminiConfig{Model: "m", APIKey: "k", BaseURL: url})
	if _, err := m.Generate(context.Background(), Request{}, nil); !IsKind(err, KindNetwork) {
		t.Errorf("closed server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, Request{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestGeminiEndpoints(t *testing.T) {
	cases := []struct {
		name string
		cfg  GeminiConfig
		url  string // the request URL, or the error's words
		adc  bool
	}{
		{"gemini api", GeminiConfig{Model: "g", APIKey: "k"}, "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse", false},
		{"tuned model", GeminiConfig{Model: "tunedModels/t", APIKey: "k"}, "https://generativelanguage.googleapis.com/v1beta/tunedModels/t:streamGenerateContent?alt=sse", false},
		{"base url", GeminiConfig{Model: "g", APIKey: "k", BaseURL: "http://127.0.0.1:9/"}, "http://127.0.0.1:9/v1beta/models/g:streamGenerateContent?alt=sse", false},
		{"vertex adc", GeminiConfig{Model: "g", Vertex: true, Project: "p", Location: "us-central1"}, "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/us-central1/publishers/google/models/g:streamGenerateContent?alt=sse", true},
		{"vertex global", GeminiConfig{Model: "g", Vertex: true, Project: "p", Location: "global"}, "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/publishers/google/models/g:streamGenerateContent?alt=sse", true},
		{"vertex express", GeminiConfig{Model: "g", Vertex: true, APIKey: "k"}, "https://aiplatform.googleapis.com/v1beta1/publishers/google/models/g:streamGenerateContent?alt=sse", false},
		{"vertex proxy", GeminiConfig{Model: "g", Vertex: true, BaseURL: "http://127.0.0.1:9"}, "http://127.0.0.1:9/v1beta1/publishers/google/models/g:streamGenerateContent?alt=sse", false},
		{"vertex without project", GeminiConfig{Model: "g", Vertex: true}, "GOOGLE_CLOUD_PROJECT", false},
		{"no key", GeminiConfig{Model: "g"}, "GEMINI_API_KEY", false},
		{"no model", GeminiConfig{APIKey: "k"}, "no model name", false},
		{"bad model", GeminiConfig{Model: "g?alt=json", APIKey: "k"}, "not valid", false},
		{"bad base", GeminiConfig{Model: "g", APIKey: "k", BaseURL: "127.0.0.1:9"}, "not an http(s) URL", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewGemini(context.Background(), c.cfg)
			if !strings.HasPrefix(c.url, "http") {
				if err == nil || !strings.Contains(err.Error(), c.url) {
					t.Fatalf("got %v, want an error with %q", err, c.url)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := m.(*gemini)
			if g.url != c.url || g.adc != c.adc {
				t.Fatalf("url %s adc %v, want %s adc %v", g.url, g.adc, c.url, c.adc)
			}
		})
	}
}

func TestOpenAIWire(t *testing.T) {
	stream := `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"ls","arguments":""}},{"index":0,"id":"a","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"completion_tokens":5}}` + "\n\n" +
		"data: [DONE]\n\n"
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = r.URL.Path + " " + r.Header.Get("Authorization") + " " + string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer srv.Close()
	m, err := NewOpenAI(OpenAIConfig{Model: "q", BaseURL: srv.URL + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Generate(context.Background(), Request{
		System: "sys",
		Messages: []Message{
			{Role: User, Text: "u"},
			{Role: Assistant, Calls: []Call{{ID: "c1", Name: "read", Args: json.RawMessage(`{}`)}}},
			{Role: Tool, Results: []Result{{CallID: "c1", Name: "read", Text: "oops", IsError: true}}},
		},
		Tools:           []ToolDecl{{Name: "read", Schema: map[string]any{"type": "object"}}},
		MaxOutputTokens: 9,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "Hi" || r.Finish != FinishStop || r.OutputTokens != 5 || len(r.Calls) != 2 ||
		r.Calls[0].ID != "a" || string(r.Calls[0].Args) != `{"path":1}` || r.Calls[1].Name != "ls" || string(r.Calls[1].Args) != "{}" {
		t.Errorf("reply %+v", r)
	}
	for _, want := range []string{
		"/v1/chat/completions Bearer none ",
		`{"role":"system","content":"sys"}`,
		`"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]`,
		`{"role":"tool","content":"Error: oops","tool_call_id":"c1"}`,
		`"max_tokens":9`,
		`"stream":true`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s:\n%s", want, body)
		}
	}
}

func TestOpenAIErrors(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		kind       Kind
	}{
		{"no tools (Ollama)", `{"error":{"message":"registry.ollama.ai/library/x does not support tools","type":"api_error"}}`, 400, KindNoTools},
		{"model not found", `{"error":{"message":"The model q does not exist","type":"invalid_request_error","code":"model_not_found"}}`, 400, KindNotFound},
		{"bad key", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, 401, KindAuth},
		{"not JSON", `<html>bad gateway</html>`, 502, KindServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			m, _ := NewOpenAI(OpenAIConfig{Model: "q", BaseURL: srv.URL + "/v1"})
			_, err := m.Generate(context.Background(), Request{Messages: []Message{{Role: User, Text: "u"}}}, nil)
			if !IsKind(err, c.kind) {
				t.Fatalf("got %v, want kind %s", err, c.kind)
			}
		})
	}
}

// TestVertexADC runs Vertex AI with application-default credentials: a
// service-account key whose token endpoint is a loopback server stands in
// for Google's, and the model request must carry the token it issued.
func TestVertexADC(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var tokenRequests atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenRequests.Add(1)
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, "bad grant", 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"adc-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()
	cred, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "client_email": "gemkit-test@p.iam.gserviceaccount.com",
		"private_key_id": "k1", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri": tokens.URL + "/token",
	})
	credFile := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(credFile, cred, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", credFile)

	var auth string
	vertex := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization") + " " + r.URL.Path
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]},\"finishReason\":\"STOP\"}]}\n\n")
	}))
	defer vertex.Close()
	m, err := NewGemini(context.Background(), GeminiConfig{Model: "g", Vertex: true, Project: "p", Location: "us-central1", BaseURL: vertex.URL})
	if err != nil {
		t.Fatal(err)
	}
	if tokenRequests.Load() != 0 {
		t.Fatal("credentials were fetched before the first request")
	}
	// The first call's context ends with it; the token source must not.
	ctx, cancel := context.WithCancel(context.Background())
	r, err := m.Generate(ctx, Request{Messages: []Message{{Role: User, Text: "hi"}}}, nil)
	cancel()
	if err != nil || r.Text != "ok" {
		t.Fatalf("%+v %v", r, err)
	}
	if want := "Bearer adc-token /v1beta1/projects/p/locations/us-central1/publishers/google/models/g:streamGenerateContent"; auth != want {
		t.Fatalf("request %q, want %q", auth, want)
	}
	if _, err := m.Generate(context.Background(), Request{Messages: []Message{{Role: User, Text: "again"}}}, nil); err != nil {
		t.Fatalf("second call: %v", err)
	}

	// Without any credentials the error says what to do.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	m, _ = NewGemini(context.Background(), GeminiConfig{Model: "g", Vertex: true, Project: "p", Location: "us-central1", BaseURL: vertex.URL})
	if _, err := m.Generate(context.Background(), Request{}, nil); !IsKind(err, KindAuth) || !strings.Contains(err.Error(), "gcloud auth application-default login") {
		t.Fatalf("missing credentials: %v", err)
	}
}
