package agenttoml

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// iarnaScript parses each document of its input (a JSON array of
// base64 texts) as Gemini CLI 0.61 does, with the @iarna/toml that
// @google/gemini-cli-core itself resolves, after Node's UTF-8 decoding,
// and prints one line each: the value in the shape encode gives it, or
// the error's first line.
const iarnaScript = `
const { createRequire } = require("node:module");
const req = createRequire(process.argv[2]);
const toml = req("@iarna/toml");
const enc = (v) => {
  if (typeof v === "string") return { s: v };
  if (typeof v === "boolean") return { b: v };
  if (typeof v === "number") return { n: Object.is(v, -0) ? "-0" : String(v) };
  if (typeof v === "bigint") return { big: String(v) };
  if (v instanceof Date) return { d: v.isDate ? "date" : v.isTime ? "time" : v.isFloating ? "local" : "offset" };
  if (Array.isArray(v)) return { a: v.map(enc) };
  const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return { o: keys.map((k) => [k, enc(v[k])]) };
};
const docs = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
for (const d of docs) {
  const text = Buffer.from(d, "base64").toString("utf8");
  let line;
  try { line = JSON.stringify(enc(toml.parse(text))); }
  catch (e) { line = JSON.stringify({ error: String(e.message).split("\n")[0] }); }
  console.log(line);
}
`

// encode is v in the shape iarnaScript prints.
func encode(v Value) any {
	switch x := v.(type) {
	case string:
		return map[string]any{"s": x}
	case bool:
		return map[string]any{"b": x}
	case float64:
		if x == 0 && math.Signbit(x) {
			return map[string]any{"n": "-0"}
		}
		return map[string]any{"n": NumberText(x)}
	case BigInt:
		return map[string]any{"big": fmt.Sprint(int64(x))}
	case Datetime:
		return map[string]any{"d": x.Kind}
	case []Value:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = encode(it)
		}
		return map[string]any{"a": out}
	case *Table:
		keys := append([]string(nil), x.Keys()...)
		sort.Strings(keys)
		o := [][]any{}
		for _, k := range keys {
			v, _ := x.Get(k)
			o = append(o, []any{k, encode(v)})
		}
		return map[string]any{"o": o}
	}
	return map[string]any{"unknown": fmt.Sprintf("%T", v)}
}

// iarnaResults runs iarnaScript on docs.
func iarnaResults(t *testing.T, docs [][]byte) []string {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	script := filepath.Join(t.TempDir(), "iarna.cjs")
	if err := os.WriteFile(script, []byte(iarnaScript), 0o644); err != nil {
		t.Fatal(err)
	}
	in := make([]string, len(docs))
	for i, d := range docs {
		in[i] = base64.StdEncoding.EncodeToString(d)
	}
	body, _ := json.Marshal(in)
	cmd := exec.Command(node, script, filepath.Join(interop, "node_modules", "@google", "gemini-cli-core", "package.json"))
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(docs) {
		t.Fatalf("node answered %d documents of %d:\n%s", len(lines), len(docs), stderr.String())
	}
	return lines
}

// compareWithIarna checks every document of docs against the library:
// where Parse answers, its answer is the library's (the same value, or
// an error with the same message); it returns how many Parse called
// uncertain. Those are not given to the library: one that reaches an
// inherited property breaks its later parses in the process.
func compareWithIarna(t *testing.T, docs [][]byte) (uncertain int) {
	t.Helper()
	var sure [][]byte
	var got []string
	for _, d := range docs {
		doc, err := Parse(d)
		var ue *UncertainError
		var se *SyntaxError
		switch {
		case errors.As(err, &ue):
			uncertain++
			continue
		case errors.As(err, &se):
			b, _ := json.Marshal(map[string]string{"error": se.Msg})
			got = append(got, string(b))
		case err != nil:
			t.Fatalf("document %q: an error of neither kind: %v", d, err)
		default:
			b, _ := json.Marshal(encode(doc))
			got = append(got, string(b))
		}
		sure = append(sure, d)
	}
	want := iarnaResults(t, sure)
	for i, d := range sure {
		if !sameAnswer(got[i], want[i]) {
			t.Errorf("document %q:\n  gemkit:      %s\n  @iarna/toml: %s", d, got[i], want[i])
		}
	}
	return uncertain
}

// sameAnswer compares two answers, an error by its message without the
// library's position (" at row R, col C, pos P:").
func sameAnswer(got, want string) bool {
	if got == want {
		return true
	}
	var g, w struct{ Error *string }
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil || g.Error == nil || w.Error == nil {
		return false
	}
	msg, _, _ := strings.Cut(*w.Error, " at row ")
	return *g.Error == msg
}

// TestParseAsIarna holds Parse to the library on documents written
// for its quirks: every one it answers must be answered alike.
func TestParseAsIarna(t *testing.T) {
	docs := make([][]byte, len(quirks))
	for i, q := range quirks {
		docs[i] = []byte(q)
	}
	if n := compareWithIarna(t, docs); n != len(uncertainQuirks) {
		t.Errorf("%d documents uncertain, want %d (the dates V8 reads its own way and the inherited keys)", n, len(uncertainQuirks))
	}
	for _, q := range uncertainQuirks {
		var ue *UncertainError
		if _, err := Parse([]byte(q)); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want uncertain", q, err)
		}
	}
}

// TestParseAsIarnaGenerated holds Parse to the library on documents
// made at random from pieces of TOML, good and bad (a bounded fuzz
// against the agent's own parser, run in one node).
func TestParseAsIarnaGenerated(t *testing.T) {
	r := rand.New(rand.NewSource(71))
	n := 6000
	if testing.Short() {
		n = 500
	}
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = generate(r)
	}
	if u := compareWithIarna(t, docs); u > n/10 {
		t.Errorf("%d of %d documents uncertain: the generator wanders too far from what gemkit answers", u, n)
	}
}

// FuzzParse checks that no input makes Parse panic or answer with an
// error of another kind; TestParseAsIarnaGenerated holds its answers to
// the library's.
func FuzzParse(f *testing.F) {
	for _, q := range quirks {
		f.Add([]byte(q))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse(data)
		var ue *UncertainError
		var se *SyntaxError
		if err != nil && !errors.As(err, &ue) && !errors.As(err, &se) {
			t.Fatalf("%q: %v", data, err)
		}
	})
}

// pieces are what generate makes documents of.
var pieces = []string{
	"a", "b", "rule", "safety_checker", "toolName", "decision", "priority", "checker", "type", "name",
	"\"q k\"", "'lit'", "\"\"", "-", "_", "1", "0", "00", "42", "-7", "+3", "1_000", "1__0", "0x1F", "0xffffffffffffffff",
	"0o17", "0b101", "0b", "9007199254740993", "-9223372036854775809", "1.5", "1.", "1e5", "1E-3", "+0e5", "0e5", "-0.0",
	"inf", "-inf", "+nan", "nan", "infx", "true", "false", "tru", "\"deny\"", "\"allow\"", "'ask_user'", "\"\\u00e9\"",
	"\"\\U0001F600\"", "\"\\uD800\"", "\"\\x41\"", "\"\\e\"", "\"a\\tb\"", "\"\"\"\nx\\\n  y\"\"\"", "'''\r\nraw'''",
	"''''''", "\"\"\"a\"\"\"\"", "'''a''''", "\"\\\n\"", "2021-01-01", "2021-02-31", "2021-13-01", "1979-05-27T07:32:00Z",
	"1979-05-27 07:32:00.999-07:00", "1979-05-27T07:32:00", "07:32:00", "07:32:00.5", "24:00:00", "2021-01-01T24:00:00Z",
	"=", " = ", " ", "\t", "\n", "\r\n", "\r", "#c\n", "# c", ".", ",", "[", "]", "[[", "]]", "{", "}", "[ ", " ]",
	"\x00", "\x7f", "\ufeff", "\xe2\x82", "\xff", "é", "😀", "\"", "'", "\\", "__proto__", "toString", "hasOwnProperty",
	"[1, 2]", "[1, 2.0]", "[inf, nan]", "[\"a\", 'b']", "[[1], [\"a\"]]", "[{a = 1}, {b = 2}]", "{a = 1, b.c = 2}", "{a = 1,}",
	"[a.b]", "[[a.b]]", "a.b = 1", "a . b = 2",
}

// values are values of every kind, most of them valid.
var values = []string{
	"1", "-7", "+3", "1_000", "0x1F", "0o17", "0b101", "9007199254740993", "0xffffffffffffffff", "1.5", "-0.0", "1e5",
	"+0e5", "inf", "-inf", "nan", "true", "false", `"deny"`, "'ask_user'", `"\u00e9"`, `"a\tb"`,
	"\"\"\"\nx\\\n  y\"\"\"", "'''\r\nraw'''", `""`, "2021-01-01", "2021-02-31", "1979-05-27T07:32:00Z",
	"1979-05-27 07:32:00.999-07:00", "1979-05-27T07:32:00", "07:32:00.5 ", `"😀"`, "\"\xff\"",
}

// value is a value of values, or an inline array or table of them.
func value(r *rand.Rand, depth int) string {
	switch n := r.Intn(8); {
	case n == 0 && depth < 3:
		var items []string
		first := r.Intn(len(values))
		for k := r.Intn(4); k > 0; k-- {
			if r.Intn(3) == 0 {
				items = append(items, value(r, depth+1))
			} else {
				items = append(items, values[first])
			}
		}
		return "[" + strings.Join(items, ", ") + "]"
	case n == 1 && depth < 3:
		var items []string
		for k := r.Intn(4); k > 0; k-- {
			items = append(items, pieces[r.Intn(14)]+" = "+value(r, depth+1))
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
	return values[r.Intn(len(values))]
}

// generate makes a document of headers and assignments, then, half of
// the time, spoils it with a piece at random, so that it goes deep
// before it fails, or parses.
func generate(r *rand.Rand) []byte {
	var b strings.Builder
	key := func() string {
		k := pieces[r.Intn(14)]
		if r.Intn(4) == 0 {
			k += "." + pieces[r.Intn(14)]
		}
		return k
	}
	for lines := 1 + r.Intn(8); lines > 0; lines-- {
		switch r.Intn(5) {
		case 0:
			b.WriteString("[" + key() + "]\n")
		case 1:
			b.WriteString("[[" + key() + "]]\n")
		default:
			b.WriteString(key() + " = " + value(r, 0) + "\n")
		}
	}
	doc := []byte(b.String())
	if r.Intn(2) == 0 {
		at := r.Intn(len(doc) + 1)
		piece := pieces[r.Intn(len(pieces))]
		doc = append(doc[:at:at], append([]byte(piece), doc[at:]...)...)
	}
	return doc
}

// TestDatesAsV8 holds gemkit's idea of which dates V8 takes to V8's
// own, on dates with every field at and past its bounds: a date the
// library cannot build fails the whole document.
func TestDatesAsV8(t *testing.T) {
	r := rand.New(rand.NewSource(61))
	two := func(max int) string { return fmt.Sprintf("%02d", r.Intn(max+1)) }
	var docs [][]byte
	for i := 0; i < 3000; i++ {
		date := fmt.Sprintf("%04d-%s-%s", r.Intn(10000), two(13), two(32))
		clock := two(25) + ":" + two(60) + ":" + two(60)
		if r.Intn(2) == 0 {
			clock += "." + strings.Repeat("0", r.Intn(4)) + fmt.Sprint(r.Intn(3))
		}
		zone := []string{"Z", "", "+" + two(24) + ":" + two(60), "-" + two(24) + ":" + two(60)}[r.Intn(4)]
		switch r.Intn(4) {
		case 0:
			docs = append(docs, []byte("d = "+date+"\n"))
		case 1:
			docs = append(docs, []byte("t = "+clock+" \n"))
		default:
			docs = append(docs, []byte("d = "+date+"T"+clock+zone+"\n"))
		}
	}
	// Those out of range are uncertain (V8's fallback parser takes some
	// of them); the rest must agree.
	if u := compareWithIarna(t, docs); u > len(docs)/2 {
		t.Errorf("%d dates of %d uncertain", u, len(docs))
	}
}
