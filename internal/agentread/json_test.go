package agentread

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// jsonCases are texts by class, each read by gemkit and by the real
// JSON.parse (TestJSONMatchesNode), and the seeds of the fuzz test.
var jsonCases = []string{
	// Keys in other letters are other keys; the last duplicate wins, at
	// the first's place.
	`{"type":"command","name":"real","command":"x","Name":"decoy"}`,
	`{"hooks":{"A":1},"Hooks":{"B":2}}`,
	`{"a":1,"b":2,"a":3}`,
	`{"name":"a","name":"b","name":{"c":1}}`,
	// JavaScript's key order: array indexes first, ascending.
	`{"b":1,"2":2,"a":3,"1":4,"01":5,"4294967295":6,"4294967294":7,"-1":8}`,
	`{"__proto__":{"x":1},"constructor":2,"prototype":3,"toString":4}`,
	// Types.
	`{"timeout":"20000"}`, `{"timeout":20000.5}`, `{"timeout":1e400}`, `{"timeout":-0}`,
	`[1e-400, 5e-324, 1.7976931348623157e308, 123456789012345678901234567890, 0.1, 1e21, 1e-7, 123e-20]`,
	`[true,false,null,"",0,[],{}]`,
	// Strings.
	`"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"`, `"\ud800"`, `"\udc00\ud800"`, `"a\u0000b"`,
	"\"caf\xc3\xa9\"", "\"\xe2\x80\xa8\"",
	// What JSON.parse refuses.
	"\xef\xbb\xbf{}", `{"a":1,}`, `[1,]`, `{'a':1}`, `{"a":01}`, `{"a":.5}`, `{"a":1.}`, `{"a":+1}`,
	`{"a":NaN}`, `{"a":Infinity}`, `{"a":undefined}`, "{\"a\":\"\x01\"}", `"\x"`, `"\u12"`, `// c` + "\n{}",
	"{}\x00", "\v{}", "\f{}", "\u00a0{}", `{"a":1}{"b":2}`, ``, ` `, `nul`, `tru`, `-`, `1e`, `"abc`,
	// White space JSON allows, and text after the value.
	" \t\r\n{ \"a\" : [ 1 , 2 ] } \n", `{"a":1} x`,
	// Invalid UTF-8: Node replaces, gemkit refuses to guess.
	"{\"a\":\"\xff\"}", "{\"\xc3\":1}",
}

func TestJSONMatchesNode(t *testing.T) {
	for _, c := range jsonCases {
		agree(t, "json", []byte(c), ParseJSON)
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	if _, err := ParseJSON([]byte(deep)); !IsUnreadable(err) {
		t.Errorf("5,000 levels: %v, want unreadable", err)
	}
}

// TestJSONGeneratedMatchesNode reads a few thousand texts made from
// JSON's pieces, valid and not, with gemkit and with JSON.parse: the
// bounded run of the fuzz test that every go test makes.
func TestJSONGeneratedMatchesNode(t *testing.T) {
	r := rand.New(rand.NewPCG(76, 71))
	for range 3000 {
		agree(t, "json", []byte(genJSON(r, 0)), ParseJSON)
	}
}

// FuzzJSONMatchesNode: gemkit reads every text as JSON.parse does, or
// refuses it as unreadable (go test -fuzz FuzzJSONMatchesNode).
func FuzzJSONMatchesNode(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		agree(t, "json", text, ParseJSON)
	})
}

// jsonPieces are what genJSON builds texts from: tokens of every kind,
// some of them wrong.
var jsonPieces = []string{
	"{", "}", "[", "]", ":", ",", " ", "\n", "\t", "\r", "\v", "\ufeff",
	`"a"`, `"A"`, `"name"`, `"Name"`, `"__proto__"`, `"0"`, `"1"`, `"10"`, `"01"`, `"-1"`,
	`"\u0041"`, `"\ud83d\ude00"`, `"\ud800"`, `"\/"`, `"\q"`, "\"\x1f\"", `"é"`,
	"0", "-0", "1", "-1", "1.5", "1e3", "1E+3", "1e-3", "01", ".5", "1.", "+1", "1e400", "-1e400", "5e-324",
	"true", "false", "null", "True", "nul", "NaN", "'a'",
}

func genJSON(r *rand.Rand, depth int) string {
	if r.IntN(10) == 0 {
		// Pieces at random: mostly not JSON.
		var b strings.Builder
		for range r.IntN(8) + 1 {
			b.WriteString(jsonPieces[r.IntN(len(jsonPieces))])
		}
		return b.String()
	}
	if depth > 3 {
		return jsonPieces[12+r.IntN(len(jsonPieces)-12)]
	}
	switch r.IntN(4) {
	case 0:
		var b strings.Builder
		b.WriteString("{")
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(jsonPieces[12+r.IntN(11)] + ":" + genJSON(r, depth+1))
		}
		return b.String() + "}"
	case 1:
		var b strings.Builder
		b.WriteString("[")
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(genJSON(r, depth+1))
		}
		return b.String() + "]"
	}
	return jsonPieces[12+r.IntN(len(jsonPieces)-12)]
}

// TestStringToNumberMatchesNode: the strings a hook's timeout may be, as
// JavaScript's Number reads them.
func TestStringToNumberMatchesNode(t *testing.T) {
	for _, s := range []string{"20000", " 20000 ", "\t\n20000\u00a0", "\ufeff5", "", " ", "20000ms", "2e4", "2E+4", ".5", "5.", "+5", "-5",
		"010", "0x10", "0X1f", "0o17", "0b101", "-0x10", "+0x10", "0x", "0b2", "1_000", "Infinity", "-Infinity", "infinity", "inf", "NaN",
		"1e400", "1e-400", "0.1", "123456789012345678901234567890", "0x20000000000001", "\u20005\u3000", "5\u180e", "١٢"} {
		want, _ := agents(t).read(t, "number", []byte(s))
		n, ok := StringToNumber(s)
		if !ok {
			continue
		}
		v := Value{kind: Number, n: n}
		if got := canon(v); got != want {
			t.Errorf("Number(%q): gemkit %s, JavaScript %s", s, got, want)
		}
	}
}
