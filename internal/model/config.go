package model

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/config"
)

// Providers.
const (
	ProviderGemini = "gemini"
	ProviderOpenAI = "openai"
)

// DefaultGeminiModel is the model used when none is named.
const DefaultGeminiModel = "gemini-2.5-flash"

// Config chooses the model and endpoint: the top-level fields of the
// config file (internal/config; its "codeIntel" object belongs to
// internal/langserver), overridden field by field by command-line flags.
type Config struct {
	// Provider is "gemini" (the default) or "openai" (any
	// OpenAI-compatible endpoint; the default when BaseURL is set).
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// BaseURL is the endpoint: for openai the API root (…/v1); for gemini
	// it replaces GOOGLE_GEMINI_BASE_URL.
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeyEnv names the environment variable holding the key for an
	// openai endpoint (default OPENAI_API_KEY). Keys are never stored in
	// the file.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// ToolProtocol is "native" (function calling, the default) or "text"
	// (the <tool_code> protocol, for models without function calling).
	ToolProtocol string `json:"toolProtocol,omitempty"`
	// MaxTurns, MaxOutputTokens and ToolTimeout (a Go duration such as
	// "60s") are the agent's limits; zero keeps the defaults.
	MaxTurns        int    `json:"maxTurns,omitempty"`
	MaxOutputTokens int    `json:"maxOutputTokens,omitempty"`
	ToolTimeout     string `json:"toolTimeout,omitempty"`
	// MaxAttempts is how many times one model request may be sent while
	// it is refused (429, 5xx) or cannot connect (see Retry.MaxAttempts):
	// 1 turns retries off; zero keeps DefaultMaxAttempts, as Gemini CLI's
	// general.maxAttempts setting does.
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// RetryDelay (a Go duration) is the first wait before a retry, which
	// doubles after each one up to 30 s; zero keeps DefaultInitialDelay.
	RetryDelay string `json:"retryDelay,omitempty"`
	// RetryMaxWait (a Go duration) bounds the waits of one request's
	// retries, all together; zero keeps DefaultMaxWait.
	RetryMaxWait string `json:"retryMaxWait,omitempty"`
}

// ConfigPath is where the config file lives by default (config.Path
// with no --config).
func ConfigPath() (string, error) {
	return config.Path("")
}

// LoadConfig reads the model's settings from the config file at path (a
// missing file is an empty Config); the file is read by config.Read, as
// every owner of a section reads it.
func LoadConfig(path string) (Config, error) {
	f, err := config.Read(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(f.Model, f.Path)
}

// ParseConfig decodes and checks the model's section of the config file
// (the top-level fields; raw may be empty: the defaults). Unknown fields
// are errors, so a typo is not silently ignored; from names the file in
// messages.
func ParseConfig(raw json.RawMessage, from string) (Config, error) {
	var c Config
	if err := config.Decode(raw, from, "", &c); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", from, err)
	}
	return c, nil
}

// Merge returns c with the non-zero fields of over applied.
func (c Config) Merge(over Config) Config {
	if over.Provider != "" {
		c.Provider = over.Provider
	}
	if over.Model != "" {
		c.Model = over.Model
	}
	if over.BaseURL != "" {
		c.BaseURL = over.BaseURL
		if over.Provider == "" && c.Provider == "" {
			c.Provider = ProviderOpenAI
		}
	}
	if over.APIKeyEnv != "" {
		c.APIKeyEnv = over.APIKeyEnv
	}
	if over.ToolProtocol != "" {
		c.ToolProtocol = over.ToolProtocol
	}
	if over.MaxTurns != 0 {
		c.MaxTurns = over.MaxTurns
	}
	if over.MaxOutputTokens != 0 {
		c.MaxOutputTokens = over.MaxOutputTokens
	}
	if over.ToolTimeout != "" {
		c.ToolTimeout = over.ToolTimeout
	}
	if over.MaxAttempts != 0 {
		c.MaxAttempts = over.MaxAttempts
	}
	if over.RetryDelay != "" {
		c.RetryDelay = over.RetryDelay
	}
	if over.RetryMaxWait != "" {
		c.RetryMaxWait = over.RetryMaxWait
	}
	return c
}

// Validate checks the fields that take one of a few values.
func (c Config) Validate() error {
	switch c.Provider {
	case "", ProviderGemini, ProviderOpenAI:
	default:
		return fmt.Errorf("provider %q: use %q or %q", c.Provider, ProviderGemini, ProviderOpenAI)
	}
	switch c.ToolProtocol {
	case "", "native", "text":
	default:
		return fmt.Errorf("tool protocol %q: use native or text", c.ToolProtocol)
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("max attempts %d: use 1 or more (1 turns retries off)", c.MaxAttempts)
	}
	if _, err := c.Retry(); err != nil {
		return err
	}
	return nil
}

// Retry is the retry policy c sets, without its OnWait.
func (c Config) Retry() (Retry, error) {
	r := Retry{MaxAttempts: c.MaxAttempts}
	for _, f := range []struct {
		name, value string
		to          *time.Duration
	}{{"retry delay", c.RetryDelay, &r.InitialDelay}, {"retry max wait", c.RetryMaxWait, &r.MaxWait}} {
		if f.value == "" {
			continue
		}
		d, err := time.ParseDuration(f.value)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("%s %q: use a positive Go duration such as 5s or 10m", f.name, f.value)
		}
		*f.to = d
	}
	return r, nil
}

// provider is c's provider: as named, else OpenAI-compatible when a base
// URL is given, else Gemini.
func (c Config) provider() string {
	switch {
	case c.Provider != "":
		return c.Provider
	case c.BaseURL != "":
		return ProviderOpenAI
	}
	return ProviderGemini
}

// ModelName is the model c runs: as named, else DefaultGeminiModel for
// Gemini ("" for an OpenAI-compatible server, which must name one).
func (c Config) ModelName() string {
	if c.Model == "" && c.provider() == ProviderGemini {
		return DefaultGeminiModel
	}
	return c.Model
}

// Open builds the model c names, reading keys and Gemini CLI's variables
// through getenv.
func Open(ctx context.Context, c Config, getenv func(string) string) (Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.provider() == ProviderOpenAI {
		keyEnv := c.APIKeyEnv
		if keyEnv == "" {
			keyEnv = "OPENAI_API_KEY"
		}
		return NewOpenAI(OpenAIConfig{Model: c.Model, BaseURL: c.BaseURL, APIKey: getenv(keyEnv)})
	}
	g := GeminiConfig{Model: c.ModelName(), BaseURL: c.BaseURL}
	if v := strings.ToLower(getenv("GOOGLE_GENAI_USE_VERTEXAI")); v == "true" || v == "1" {
		g.Vertex = true
		g.Project, g.Location = getenv("GOOGLE_CLOUD_PROJECT"), getenv("GOOGLE_CLOUD_LOCATION")
		g.APIKey = getenv("GOOGLE_API_KEY")
		if g.BaseURL == "" {
			g.BaseURL = getenv("GOOGLE_VERTEX_BASE_URL")
		}
	} else {
		g.APIKey = getenv("GEMINI_API_KEY")
		if g.APIKey == "" {
			g.APIKey = getenv("GOOGLE_API_KEY")
		}
		if g.BaseURL == "" {
			g.BaseURL = getenv("GOOGLE_GEMINI_BASE_URL")
		}
	}
	return NewGemini(ctx, g)
}
