package langserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

// A name matches case first (sindresorhus/ky's source/core/Ky.ts: local
// response constants beside uses of the Response type): the type
// written as asked is the answer, the constants are offered beside it.
func TestPoolTypeScriptNameCase(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "typescript-language-server")
	tl, _, ws := tools(t, "ts", codeinteltest.PathWith(bin))
	os.WriteFile(filepath.Join(ws, "src", "fetcher.ts"), []byte(`/** Fetches url. */
export async function get(url: string): Promise<Response> {
  const response = await fetch(url);
  return response;
}

/** Whether input is an answer that went well. */
export function isOk(input: unknown): boolean {
  const response = input as Response;
  return response.ok;
}
`), 0o644)
	warm(t, tl, codeintel.ToolDefinition, `{"symbol":"greet","file":"src/main.ts"}`, "src/greet.ts:14:17")
	got := ask(t, tl, codeintel.ToolReferences, `{"symbol":"Response","file":"src/fetcher.ts"}`,
		"references to Response (used at src/fetcher.ts:2:49)",
		"(names that differ in case only: get.response (constant, src/fetcher.ts:3:9), isOk.response (constant, src/fetcher.ts:9:9)",
		"src/fetcher.ts\n  2:49: export async function get(url: string): Promise<Response> {", "9:29: const response = input as Response;",
		"lib.dom.d.ts [outside the workspace: npm package typescript]", "interface Response extends Body {")
	if strings.Contains(got, "4:10:") {
		t.Fatalf("the constant's uses are listed:\n%s", got)
	}
	// The constants are still found by their own name.
	ask(t, tl, codeintel.ToolReferences, `{"symbol":"response","file":"src/fetcher.ts"}`, "response names 2 declarations")
}
