package model_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/model"
)

// TestList reads the models a provider offers: the Gemini API's
// models.list (only those that generate content), an OpenAI-compatible
// endpoint's /models (sorted), none for Vertex AI; an endpoint that
// fails is an error, never a guess.
func TestList(t *testing.T) {
	gem, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer gem.Close()
	oai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer sk" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"qwen3"},{"id":"llama3"},{"id":""}]}`))
	}))
	defer oai.Close()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name    string
		cfg     model.Config
		env     map[string]string
		want    []string
		wantErr bool
	}{
		{"gemini", model.Config{}, map[string]string{"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": gem.URL}, []string{"gemini-2.5-flash", "gemini-2.5-pro"}, false},
		{"openai", model.Config{BaseURL: oai.URL + "/v1"}, map[string]string{"OPENAI_API_KEY": "sk"}, []string{"llama3", "qwen3"}, false},
		{"openai refused", model.Config{BaseURL: oai.URL + "/v1"}, nil, nil, true},
		{"vertex", model.Config{}, map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := model.List(context.Background(), tc.cfg, env(tc.env))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			var ids []string
			for _, m := range got {
				ids = append(ids, m.ID)
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("got %v, want %v", ids, tc.want)
			}
		})
	}
}
