package jsonrpc

import (
	"strings"
	"testing"
)

func TestCheckJSONText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		bad  string // part of the error, "" when valid
	}{
		{"ascii", `{"content":"hello"}`, ""},
		{"utf8", `{"content":"héllo 世界 🎉"}`, ""},
		{"pair escape", `{"content":"\ud83c\udf89"}`, ""},
		{"escaped backslash then u", `{"content":"\\ud800"}`, ""},
		{"bmp escape", `{"content":"\u00e9\u4e16"}`, ""},
		{"latin1 byte", "{\"content\":\"caf\xe9\"}", "0xE9 at byte offset 15"},
		{"truncated sequence", "{\"content\":\"\xe4\xb8\"}", "not valid UTF-8"},
		{"lone high", `{"content":"a\ud800b"}`, `\uD800`},
		{"lone high at end", `{"content":"\ud83c"}`, `\uD83C`},
		{"lone low", `{"content":"\udc00"}`, `\uDC00`},
		{"high then high", `{"content":"\ud800\ud800"}`, `\uD800`},
		{"reversed pair", `{"content":"\udf89\ud83c"}`, `\uDF89`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSONText([]byte(tt.in))
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("CheckJSONText(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Fatalf("CheckJSONText(%q) = %v, want an error with %q", tt.in, err, tt.bad)
			}
		})
	}
}
