package lspbroker

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// arrayLocList is the wire's list of locations as it was first written
// (each location an array of five numbers, through encoding/json): the
// reference the string form is measured against.
type arrayLocList []codeintel.Location

type wireArrayLocList struct {
	Files []string `json:"f"`
	Locs  [][5]int `json:"l"`
}

func (l arrayLocList) MarshalJSON() ([]byte, error) {
	w := wireArrayLocList{Files: []string{}, Locs: make([][5]int, 0, len(l))}
	index := map[string]int{}
	for _, loc := range l {
		key := "p:" + loc.Path
		if loc.Path == "" {
			key = "u:" + loc.URI
		}
		i, ok := index[key]
		if !ok {
			i = len(w.Files)
			index[key] = i
			w.Files = append(w.Files, key)
		}
		r := loc.Range
		w.Locs = append(w.Locs, [5]int{i, r.Start.Line, r.Start.Character, r.End.Line, r.End.Character})
	}
	return json.Marshal(w)
}

func (l *arrayLocList) UnmarshalJSON(b []byte) error {
	var w wireArrayLocList
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := make(arrayLocList, 0, len(w.Locs))
	for _, x := range w.Locs {
		if x[0] < 0 || x[0] >= len(w.Files) {
			return errors.New("a location names no file of the list")
		}
		loc := codeintel.Location{Range: codeintel.Range{
			Start: codeintel.Position{Line: x[1], Character: x[2]},
			End:   codeintel.Position{Line: x[3], Character: x[4]},
		}}
		f := w.Files[x[0]]
		if p, ok := strings.CutPrefix(f, "p:"); ok {
			loc.Path = p
		} else {
			loc.URI = strings.TrimPrefix(f, "u:")
		}
		out = append(out, loc)
	}
	*l = out
	return nil
}

// overWire is locs sent by the broker and read by the client.
func overWire(t testing.TB, locs []codeintel.Location) []codeintel.Location {
	b, err := json.Marshal(encodeLocs(locs))
	if err != nil {
		t.Fatal(err)
	}
	var w locList
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	got, err := w.decode()
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return got
}

func loc(path, uri string, l1, c1, l2, c2 int) codeintel.Location {
	return codeintel.Location{Path: path, URI: uri, Range: codeintel.Range{
		Start: codeintel.Position{Line: l1, Character: c1}, End: codeintel.Position{Line: l2, Character: c2}}}
}

func TestLocList(t *testing.T) {
	cases := [][]codeintel.Location{
		{},
		{loc("/w/a.go", "", 0, 0, 0, 0)},
		{loc("/w/a b.go", "", 15, 5, 15, 10), loc("", "jdt://contents/String.class", 1, 2, 3, 4), loc("/w/a b.go", "", 20, 1, 22, 0), loc("/w/c.go", "", 3, 9, 3, 14)},
		// What no server sends, kept all the same.
		{loc("", "", -1, -2, 7, 1), loc("/w/\"x\" \\ y\n.go", "", math.MaxInt, math.MinInt, math.MinInt, math.MaxInt)},
	}
	for i, locs := range cases {
		if got := overWire(t, locs); !reflect.DeepEqual(got, locs) {
			t.Errorf("case %d: got %+v, want %+v", i, got, locs)
		}
	}
	for _, bad := range []locList{
		{Files: []string{"p:/a"}, Locs: "0 1 2 3"},
		{Files: []string{"p:/a"}, Locs: "0 1 2 3 4"},
		{Files: []string{"p:/a"}, Locs: "1 1 2 3 4 "},
		{Files: []string{"p:/a"}, Locs: "-1 1 2 3 4 "},
		{Files: []string{"p:/a"}, Locs: "0 1 x 3 4 "},
		{Files: []string{"p:/a"}, Locs: "0 1 2 3 99999999999999999999 "},
		{Files: []string{"p:/a"}, Locs: "0  1 2 3 4 "},
		{Files: []string{"/a"}, Locs: "0 1 2 3 4 "},
	} {
		if got, err := bad.decode(); err == nil {
			t.Errorf("%+v was read as %+v", bad, got)
		}
	}
}

// FuzzLocList: whatever locations go over the wire come back as they
// were, and a list the broker could not have sent is refused, never
// misread: what is read is what the broker sends for it.
func FuzzLocList(f *testing.F) {
	f.Add("/w/a.go", "jdt://x", 15, 5, 15, 10, "0 15 5 0 5 1 3 4 0 1 ")
	f.Add("", "", -1, 0, math.MaxInt, math.MinInt, "")
	f.Add("/a", "u", 0, 0, 0, 0, "0 1 2 3 4 0 1")
	f.Fuzz(func(t *testing.T, path, uri string, line, char, endLine, endChar int, raw string) {
		if !utf8.ValidString(path) || !utf8.ValidString(uri) {
			// JSON carries text; paths and URIs come from servers'
			// JSON, so they are.
			return
		}
		locs := []codeintel.Location{loc(path, "", line, char, endLine, endChar), loc("", uri, endLine, endChar, line, char), loc(path, "", char, line, endChar, endLine)}
		if got := overWire(t, locs); !reflect.DeepEqual(got, locs) {
			t.Fatalf("got %+v, want %+v", got, locs)
		}
		if path == "" && uri == "" {
			uri = "untitled:x" // two files, told apart
		}
		w := locList{Files: []string{"p:" + path, "u:" + uri}, Locs: raw}
		got, err := w.decode()
		if err != nil {
			return
		}
		// Read: then raw is what encodeLocs writes for got.
		files := []codeintel.Location{{Path: path}, {URI: uri}}
		var want strings.Builder
		for _, l := range got {
			i := 0
			if l.Path != path || l.URI != "" {
				i = 1
			}
			if f := files[i]; f.Path != l.Path || f.URI != l.URI {
				t.Fatalf("%q: a location in no file of the list: %+v", raw, l)
			}
			r := l.Range
			fmt.Fprintf(&want, "%d %d %d %d %d ", i, r.Start.Line, r.Start.Character, r.End.Line-r.Start.Line, r.End.Character-r.Start.Character)
		}
		if want.String() != raw {
			t.Fatalf("%q was read as %+v, which is sent as %q", raw, got, want.String())
		}
	})
}

// manyLocations are a thousand references in a hundred files, as gopls
// gives them for greet.Greet in the benchmark's workspace.
func manyLocations() []codeintel.Location {
	locs := []codeintel.Location{loc("/tmp/ws/greet/greet.go", "", 15, 5, 15, 10)}
	for p := range 20 {
		for f := range 5 {
			for i := range 10 {
				locs = append(locs, loc(fmt.Sprintf("/tmp/ws/gen/p%02d/f%d.go", p, f), "", 4+2*i, 38, 4+2*i, 43))
			}
		}
	}
	return locs
}

// BenchmarkLocList: a thousand references from the broker to the
// client (encoded, then decoded as the client's connection does: checked,
// read as a message, then as the result), as arrays of numbers (the
// first form) and as one string.
func BenchmarkLocList(b *testing.B) {
	locs := manyLocations()
	type message struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	type response struct {
		ID     int `json:"id"`
		Result any `json:"result"`
	}
	for _, form := range []string{"arrays", "string"} {
		b.Run(form, func(b *testing.B) {
			var size int
			for b.Loop() {
				var res any = encodeLocs(locs)
				if form == "arrays" {
					res = arrayLocList(locs)
				}
				out, err := json.Marshal(response{ID: 7, Result: res})
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
				var m message
				if !json.Valid(out) || json.Unmarshal(out, &m) != nil {
					b.Fatal("bad message")
				}
				var got []codeintel.Location
				if form == "arrays" {
					var l arrayLocList
					err = json.Unmarshal(m.Result, &l)
					got = l
				} else {
					var l locList
					if err = json.Unmarshal(m.Result, &l); err == nil {
						got, err = l.decode()
					}
				}
				if err != nil || len(got) != len(locs) {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
