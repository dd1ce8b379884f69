package claudeswitch

import (
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// ServeOnly is choose for gemkit mcp --only x (choose itself when x is
// ""): the servers of the
// extension x alone, and none while x is a twin gemkit holds (Held,
// asked at each start), so that a plugin Claude Code updated runs
// nothing until the person agrees again.
func ServeOnly(choose extmcp.Choose, home, x string) extmcp.Choose {
	if x == "" {
		return choose
	}
	return func(e *disclosure.Extension) extmcp.Choice {
		if e.Name != x {
			return extmcp.Choice{Why: "gemkit mcp --only " + x + " serves that extension alone"}
		}
		if why := Held(home, x); why != "" {
			return extmcp.Choice{Why: "held: " + why}
		}
		return choose(e)
	}
}
