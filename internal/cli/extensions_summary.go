package cli

import (
	"bufio"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/disclosure"
)

// summaryJSON is `summary --json`: what the model reads (text), the same
// content structured, and what was left out of the model's view and why.
type summaryJSON struct {
	disclosure.Summary
	Workspace string               `json:"workspace"`
	Skipped   []disclosure.Skipped `json:"skipped"`
	Tools     []summaryToolSchema  `json:"tools"`
}

// summaryToolSchema is a tool as an MCP client lists it.
type summaryToolSchema struct {
	Name        string         `json:"name"`
	Extension   string         `json:"extension"`
	Tool        string         `json:"tool"`
	InputSchema map[string]any `json:"inputSchema"`
}

func newExtSummaryCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		budget int
	)
	cmd := &cobra.Command{
		Use:   "summary",
		Short: "Print the summary of the enabled extensions that a model is given",
		Long: `Print exactly what a model is told up front about the extensions enabled in the
workspace (progressive disclosure): each extension's name and description, its
tools with their signatures and one-line descriptions, its docs by name, its
agent skills by name and description, and its examples. Full tool
descriptions, doc texts and skills' instructions are not in it: a model gets
them from the tool list and read_doc (name skill:NAME for a skill) when it
needs them.

` + "`gemkit mcp`" + ` gives this text as its instructions. It is held to --budget
characters: first the examples are left out, then the tools' and docs'
descriptions, then the tools' arguments, then the skills' descriptions, then
whole extensions from the end of the list, and a last line says what was left
out.

--json adds the same content structured, the extensions left out of the
model's view (disabled here, invalid) with why, and each tool's input schema.`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			set, err := disclosure.Load(st)
			if set == nil {
				return err
			}
			if err != nil {
				cmd.PrintErrln("gemkit: warning:", err)
			}
			sum := set.Summary(budget)
			if asJSON {
				out := summaryJSON{Summary: sum, Workspace: set.Workspace, Skipped: set.Skipped, Tools: []summaryToolSchema{}}
				if out.Skipped == nil {
					out.Skipped = []disclosure.Skipped{}
				}
				for _, t := range set.Tools() {
					out.Tools = append(out.Tools, summaryToolSchema{Name: t.Name, Extension: t.Extension, Tool: t.Tool, InputSchema: t.InputSchema})
				}
				return writeJSON(a.Out, out)
			}
			w := bufio.NewWriter(a.Out)
			printableWriter{w}.Write([]byte(sum.Text))
			if len(sum.Text) > 0 && sum.Text[len(sum.Text)-1] != '\n' {
				w.WriteString("\n")
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary with its structure, the tools' schemas and what is left out, as JSON")
	cmd.Flags().IntVar(&budget, "budget", disclosure.DefaultBudget, "the most characters the summary may take")
	return cmd
}
