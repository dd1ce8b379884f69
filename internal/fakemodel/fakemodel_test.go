package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestScriptAndRecord(t *testing.T) {
	s, err := Start(Call("demo_tool", map[string]any{"x": 1}), Text("done"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	resp := post(t, s.URL+"/v1beta/models/m1:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	var got struct {
		Candidates []struct{ Content Content } `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data: "))), &got); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if fc := got.Candidates[0].Content.Parts[0].FunctionCall; fc == nil || fc.Name != "demo_tool" || fc.Args["x"] != 1.0 {
		t.Fatalf("reply %+v", got)
	}

	// A router call is answered from its schema and does not use the script.
	resp = post(t, s.URL+"/v1beta/models/m2:generateContent", `{"contents":[],"generationConfig":{"responseMimeType":"application/json",
	 "responseJsonSchema":{"type":"object","properties":{"model_choice":{"type":"string","enum":["flash","pro"]},"reasoning":{"type":"string"}}}}}`)
	var jr struct {
		Candidates []struct{ Content Content } `json:"candidates"`
	}
	json.NewDecoder(resp.Body).Decode(&jr)
	if txt := jr.Candidates[0].Content.Parts[0].Text; txt != `{"model_choice":"flash","reasoning":""}` {
		t.Fatalf("router answer %q", txt)
	}

	resp = post(t, s.URL+"/v1beta/models/m1:generateContent", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"demo_tool","response":{"output":"42"}}}]}]}`)
	json.NewDecoder(resp.Body).Decode(&jr)
	if txt := jr.Candidates[0].Content.Parts[0].Text; txt != "done" {
		t.Fatalf("second turn %q", txt)
	}
	if resp := post(t, s.URL+"/v1beta/other", `{}`); resp.StatusCode != 404 {
		t.Fatalf("other path: %d", resp.StatusCode)
	}

	turns := s.Turns()
	if len(turns) != 2 || len(s.Requests()) != 4 || s.Left() != 0 {
		t.Fatalf("turns %d, requests %d, left %d", len(turns), len(s.Requests()), s.Left())
	}
	g, err := turns[1].Generate()
	if err != nil || len(g.FunctionResponses()) != 1 || g.FunctionResponses()[0].Response["output"] != "42" {
		t.Fatalf("recorded %+v %v", g, err)
	}
	if turns[0].Model != "m1" || turns[0].Action != "streamGenerateContent" || turns[0].Query != "alt=sse" {
		t.Fatalf("parsed %+v", turns[0])
	}
}

func TestJSONAnswers(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddJSON(`{"score": 70}`)
	body := `{"contents":[],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"score":{"type":"INTEGER"}}}}}`
	for _, want := range []string{`{"score": 70}`, `{"score":1}`} {
		var jr struct {
			Candidates []struct{ Content Content } `json:"candidates"`
		}
		json.NewDecoder(post(t, s.URL+"/v1beta/models/m:generateContent", body).Body).Decode(&jr)
		if got := jr.Candidates[0].Content.Parts[0].Text; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if len(s.Turns()) != 0 {
		t.Errorf("structured calls counted as turns")
	}
}
