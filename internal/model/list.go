package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// listTimeout bounds one request for a provider's model list: a list
// the agent cannot get in time is no list, and the configured model is
// offered alone.
const listTimeout = 10 * time.Second

// maxList bounds a model list's body.
const maxList = 4 << 20

// List is the models c's provider offers for generating text: the
// Gemini API's models.list (those whose supportedGenerationMethods name
// generateContent), an OpenAI-compatible endpoint's GET /models. Vertex
// AI has no list of the publisher's models that an API key may read:
// List gives nil, and the caller offers the configured model only.
// Keys are read through getenv, as Open reads them.
func List(ctx context.Context, c Config, getenv func(string) string) ([]Info, error) {
	provider := c.Provider
	if provider == "" {
		provider = ProviderGemini
		if c.BaseURL != "" {
			provider = ProviderOpenAI
		}
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	if provider == ProviderOpenAI {
		keyEnv := c.APIKeyEnv
		if keyEnv == "" {
			keyEnv = "OPENAI_API_KEY"
		}
		return listOpenAI(ctx, c.BaseURL, getenv(keyEnv))
	}
	if v := strings.ToLower(getenv("GOOGLE_GENAI_USE_VERTEXAI")); v == "true" || v == "1" {
		return nil, nil
	}
	key := getenv("GEMINI_API_KEY")
	if key == "" {
		key = getenv("GOOGLE_API_KEY")
	}
	base := c.BaseURL
	if base == "" {
		base = getenv("GOOGLE_GEMINI_BASE_URL")
	}
	if base == "" {
		base = "https://generativelanguage.googleapis.com/"
	}
	return listGemini(ctx, base, key)
}

// listGemini reads the Gemini API's models.list, page by page (at most
// 20 pages).
func listGemini(ctx context.Context, base, key string) ([]Info, error) {
	var out []Info
	page := ""
	for range 20 {
		q := url.Values{"pageSize": {"1000"}}
		if page != "" {
			q.Set("pageToken", page)
		}
		var body struct {
			Models []struct {
				Name, DisplayName, Description string
				SupportedGenerationMethods     []string
			}
			NextPageToken string
		}
		if err := getJSON(ctx, strings.TrimRight(base, "/")+"/v1beta/models?"+q.Encode(), map[string]string{"x-goog-api-key": key}, &body); err != nil {
			return nil, err
		}
		for _, m := range body.Models {
			if !slices.Contains(m.SupportedGenerationMethods, "generateContent") {
				continue
			}
			out = append(out, Info{ID: strings.TrimPrefix(m.Name, "models/"), Name: m.DisplayName, Description: m.Description})
		}
		if page = body.NextPageToken; page == "" {
			break
		}
	}
	return out, nil
}

// listOpenAI reads an OpenAI-compatible endpoint's GET /models.
func listOpenAI(ctx context.Context, base, key string) ([]Info, error) {
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	h := map[string]string{}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	if err := getJSON(ctx, strings.TrimRight(base, "/")+"/models", h, &body); err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(body.Data))
	for _, m := range body.Data {
		if m.ID != "" {
			out = append(out, Info{ID: m.ID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// getJSON GETs u with the headers h and decodes its JSON body into v.
func getJSON(ctx context.Context, u string, h map[string]string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, val := range h {
		req.Header.Set(k, val)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("list the models: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxList))
	if err != nil {
		return fmt.Errorf("list the models: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list the models: the API answered %s", resp.Status)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("list the models: the answer is not a model list: %w", err)
	}
	return nil
}
