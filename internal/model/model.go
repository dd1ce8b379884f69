// Package model is the one small interface gemkit's agent talks to a
// language model through, with two implementations: the Gemini REST API
// (and Vertex AI), spoken over net/http, and any OpenAI-compatible
// chat-completions endpoint (Ollama, llama.cpp, vLLM, OpenRouter, NVIDIA
// NIM, OpenAI), spoken over net/http with the same SSE reader. No library type leaves this package, so the agent
// loop is the same whatever the model.
//
// The Gemini side does not use Google's genai SDK on purpose: one gemkit
// binary holds every command, and Go initializes every linked package at
// each start, so the SDK's gRPC, OpenCensus and Cloud auth dependencies
// cost the IDE companion memory and start-up time though it never talks
// to a model (bench/README.md has the figures).
package model

import (
	"context"
	"encoding/json"
)

// Role says who a message is from.
type Role string

const (
	// User is the person (and gemkit speaking for them: IDE context,
	// tool results in the text protocol).
	User Role = "user"
	// Assistant is the model.
	Assistant Role = "model"
	// Tool carries results of native function calls back to the model.
	Tool Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Text is the message's text (a user prompt, the model's words).
	Text string `json:"text,omitempty"`
	// Calls are the model's native function calls (Assistant only).
	Calls []Call `json:"calls,omitempty"`
	// Results answer Calls, in the same order (Tool only).
	Results []Result `json:"results,omitempty"`
}

// Call is the model asking for a tool.
type Call struct {
	// ID identifies the call where the API has ids (OpenAI, Gemini 3);
	// gemkit makes one up where it does not, and never sends a made-up
	// one to the Gemini API.
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// RawArgs are the arguments as the model wrote them when they were not
	// JSON (Args then holds them as a JSON string); they are sent back as
	// written.
	RawArgs string `json:"rawArgs,omitempty"`
	// Signature is the Gemini API's thoughtSignature of the call, which
	// thinking models (Gemini 3) require back with the call in the next
	// request.
	Signature string `json:"signature,omitempty"`
}

// Result is a tool's outcome as the model reads it.
type Result struct {
	CallID  string `json:"callId,omitempty"`
	Name    string `json:"name"`
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`
}

// ToolDecl offers one function to the model.
type ToolDecl struct {
	Name        string
	Description string
	// Schema is the JSON Schema (an object) of the arguments.
	Schema map[string]any
}

// Request is one model turn's input.
type Request struct {
	System   string
	Messages []Message
	// Tools are offered for native function calling; empty means none
	// (the text protocol, or no tools at all).
	Tools []ToolDecl
	// MaxOutputTokens bounds the reply; 0 leaves the API's default.
	MaxOutputTokens int
	// AfterResults marks a request whose last message carries tool
	// results in text (the text protocol); a model may end its turn there
	// without words, as after native tool results.
	AfterResults bool
}

// Finish says why the model stopped.
type Finish string

const (
	FinishStop      Finish = "stop"
	FinishMaxTokens Finish = "max_tokens"
	FinishSafety    Finish = "safety"
	FinishOther     Finish = "other"
)

// Reply is one model turn's output.
type Reply struct {
	Text   string
	Calls  []Call
	Finish Finish
	// Detail is the API's own finish or block reason, for messages.
	Detail string
	// OutputTokens is the reply's size as the API counted it (0 when it
	// did not say).
	OutputTokens int
}

// Model is a language model behind some API.
type Model interface {
	// Generate sends req and streams the reply's text to onText as it
	// arrives (onText may be nil); it returns the whole reply. Errors are
	// *Error where the API answered.
	Generate(ctx context.Context, req Request, onText func(string)) (Reply, error)
	// Describe names the model and endpoint for messages.
	Describe() string
}

// Info describes a model a provider offers (List).
type Info struct {
	// ID is the name to give --model.
	ID string
	// Name and Description are the provider's words for it, if any.
	Name, Description string
}
