package conformance_test

import (
	"encoding/json"
	"fmt"

	"github.com/gemkit/gemkit/conformance"
)

// ContextProblems says why a real CLI would drop a context update: its
// schema rejects null for every optional field. A well-formed update has
// no problems.
func ExampleContextProblems() {
	params := json.RawMessage(`{"workspaceState":{"openFiles":[{"path":"/p/main.go","timestamp":1,"cursor":null}]}}`)
	for _, p := range conformance.ContextProblems(params) {
		fmt.Println(p)
	}
	fmt.Println(len(conformance.ContextProblems(json.RawMessage(`{"workspaceState":{"openFiles":[{"path":"/p/main.go","timestamp":1}]}}`))))
	// Output:
	// openFiles[0].cursor is null, not an object
	// 0
}
