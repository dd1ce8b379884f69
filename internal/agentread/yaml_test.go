package agentread

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// yamlCases are front matters by class, read by gemkit and by the real
// js-yaml (TestYAMLMatchesJSYAML), and the seeds of the fuzz test.
var yamlCases = []string{
	"name: a\nkind: local\nmcp_servers:\n  s:\n    command: node\n    args: [x.js]\n",
	"name: a\nName: b\n", "a: 1\na: 2\n", "1: a\n1.0: b\n", "true: a\n'true': b\n", "null: a\n~: b\n",
	"b: 1\n2: 2\na: 3\n1: 4\n01: 5\n", "__proto__: {x: 1}\nconstructor: 2\n",
	"a: 0x1F\nb: 0o17\nc: 0b101\nd: 1_000\ne: 012\nf: -0\ng: -0x0\nh: +5\ni: 0b\nj: 1_\n",
	"a: 1.5\nb: .5\nc: 1.\nd: 1e3\ne: 1.e3\nf: .inf\ng: -.Inf\nh: .NaN\ni: 1_0.5\nj: 6.8523015e+5\n",
	"a: yes\nb: no\nc: on\nd: off\ne: y\nf: True\ng: TRUE\nh: tRUE\n",
	"a: ''\nb: \"\"\nc:\nd: ~\ne: null\nf: Null\ng: NULL\nh: nULL\n",
	"a: 2001-12-14\n", "a: 2001-12-14t21:59:43.10-05:00\n", "a: '2001-12-14'\n",
	"a: &x 1\nb: *x\n", "a: !!str 1\n", "a: !!binary aGk=\n", "a: !custom x\n", "<<: {a: 1}\n",
	"? [a]\n: b\n", "[a]: b\n", "{a: 1, b: [2, 3]}\n", "- a\n- b\n", "a: |\n  x\n  y\nb: >-\n  z\n  w\n",
	"a: \"\\u00e9\\x41\\t\"\nb: 'it''s'\n", "a: b: c\n", "a:\n\t- b\n", "a: [1,\n", "---\na: 1\n---\nb: 2\n",
	"", "# only a comment\n", "---\n", "...\n", "a: 1 # c\n", "a: 'x\n  y'\n", "a: x\n  y\n",
	"a: 123456789012345678901\n", "a: 9007199254740993\n", "a: 0x20000000000001\n",
	"[?0: 0]", "{?a: 1}", "[a:b]", "[a, &x b]", "? a\n: b\n", " [0\n0]", "a: [b,\n  c]\n",
	"---:", "---a: 1\n", "----: 1\n", "\n# c\n---x: 1\n", "--- :\n", "%YAML 1.2\n---\na: 1\n", "a: 1\n---:\n",
}

func TestYAMLMatchesJSYAML(t *testing.T) {
	for _, c := range yamlCases {
		agree(t, "yaml", []byte(c), ParseYAML)
	}
}

// TestYAMLGeneratedMatchesJSYAML reads a few thousand front matters made
// from YAML's pieces with gemkit and with js-yaml: the bounded run of
// the fuzz test that every go test makes.
func TestYAMLGeneratedMatchesJSYAML(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 76))
	for range 3000 {
		agree(t, "yaml", []byte(genYAML(r, 0, "")), ParseYAML)
	}
}

// FuzzYAMLMatchesJSYAML: gemkit reads every front matter as js-yaml
// does, or refuses it as unreadable (go test -fuzz FuzzYAMLMatchesJSYAML).
func FuzzYAMLMatchesJSYAML(f *testing.F) {
	for _, c := range yamlCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		agree(t, "yaml", text, ParseYAML)
	})
}

var (
	yamlKeys    = []string{"name", "Name", "kind", "mcp_servers", "command", "a", "1", "01", "true", "null", "~", "'q'", "\"d\"", "__proto__", "<<", "-1", "x y"}
	yamlScalars = []string{"a", "1", "-0", "0x1f", "0o7", "0b1", "1_0", "012", "1.5", ".5", "1.", "1e3", ".inf", "-.INF", ".nan", "yes", "no", "on", "True", "FALSE",
		"null", "~", "''", "\"\"", "'a''b'", "\"\\t\"", "2001-12-14", "12:30", "1:2", "#x", "a #c", "a: b", "[]", "{}", "[a, 1]", "{a: 1}", "- x", "&a x", "*a", "!!str 1", "|", ">", "\"", "'", "%", "@", "`", ":", "?", ""}
)

// genYAML makes a block of YAML at indent: mappings and sequences of
// keys and scalars, now and then broken.
func genYAML(r *rand.Rand, depth int, indent string) string {
	var b strings.Builder
	seq := r.IntN(4) == 0
	for range r.IntN(4) + 1 {
		b.WriteString(indent)
		if seq {
			b.WriteString("- ")
		} else {
			b.WriteString(yamlKeys[r.IntN(len(yamlKeys))] + ":")
		}
		if depth < 3 && r.IntN(3) == 0 {
			b.WriteString("\n" + genYAML(r, depth+1, indent+strings.Repeat(" ", 1+r.IntN(3))))
			continue
		}
		if !seq {
			b.WriteString(" ")
		}
		b.WriteString(yamlScalars[r.IntN(len(yamlScalars))])
		if r.IntN(20) == 0 {
			b.WriteString([]string{"\t", " #c", "\n\t", "  ", ","}[r.IntN(5)])
		}
		b.WriteString("\n")
	}
	return b.String()
}
