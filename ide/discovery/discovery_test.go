package discovery

import "testing"

func TestParseFileName(t *testing.T) {
	tests := []struct {
		name      string
		pid, port int
		ok        bool
	}{
		{"gemini-ide-server-123-4567.json", 123, 4567, true},
		{FileName(42, 65535), 42, 65535, true},
		{"gemini-ide-server-123.json", 0, 0, false},
		{"gemini-ide-server-a-1.json", 0, 0, false},
		{"gemini-ide-server-1-2.json.tmp", 0, 0, false},
		{"xgemini-ide-server-1-2.json", 0, 0, false},
	}
	for _, tt := range tests {
		pid, port, ok := ParseFileName(tt.name)
		if pid != tt.pid || port != tt.port || ok != tt.ok {
			t.Errorf("ParseFileName(%q) = %d, %d, %v; want %d, %d, %v", tt.name, pid, port, ok, tt.pid, tt.port, tt.ok)
		}
	}
}
