package extswitch

// Finding is one thing `gemkit extensions doctor` says of the switch:
// what is wrong or worth knowing, and the fix.
type Finding struct {
	// Level is "error" (Gemini CLI fails), "warning" (Gemini CLI skips
	// or drops something) or "note".
	Level     string `json:"level"`
	Extension string `json:"extension,omitempty"`
	Message   string `json:"message"`
	Fix       string `json:"fix,omitempty"`
}

// Note is one thing the switch, describe and doctor say about what an
// extension's servers get beyond the default profile, or lack: a
// variable dropped, a variable allowed that gemkit mcp will not have,
// credentials allowed that are not there.
type Note struct {
	Message string `json:"message"`
	Fix     string `json:"fix"`
}
