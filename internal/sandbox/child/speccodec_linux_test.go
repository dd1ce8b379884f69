package child

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fill sets every field of v, recursively, to a random value of its kind,
// so that a field the codec leaves out, or two it swaps, shows in a round
// trip. A kind fill does not know fails the test: the codec must learn it
// too.
func fill(t *testing.T, r *rand.Rand, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		v.SetString(string(b))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Int:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Uint64:
		v.SetUint(r.Uint64() >> r.IntN(64))
	case reflect.Slice:
		n := r.IntN(5)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, r, s.Index(i))
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, r, v.Field(i))
		}
	default:
		t.Fatalf("fill does not know %s (%s): teach it and the spec's codec", v.Type(), v.Kind())
	}
}

// nilEmpty makes the empty lists of v nil, as UnmarshalBinary leaves them.
func nilEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		for i := range v.Len() {
			nilEmpty(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			nilEmpty(v.Field(i))
		}
	}
}

func TestSpecBinary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var want Spec
		if i > 0 { // the first is the zero Spec
			fill(t, r, reflect.ValueOf(&want).Elem())
		}
		nilEmpty(reflect.ValueOf(&want).Elem())
		b, err := want.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("spec %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("spec %d: decoded\n%+v\nwant\n%+v", i, got, want)
		}
		// Every proper prefix fails: the child never builds a sandbox
		// from a spec cut short.
		if len(b) > 0 {
			cut := r.IntN(len(b))
			if err := new(Spec).UnmarshalBinary(b[:cut]); err == nil {
				t.Fatalf("spec %d cut at %d of %d bytes decoded", i, cut, len(b))
			}
		}
	}
}

func TestSpecBinaryRefuses(t *testing.T) {
	good, _ := (&Spec{Path: "/bin/true", Argv: []string{"/bin/true"}, Gated: true}).MarshalBinary()
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "middle of a value"},
		{"trailing", append(append([]byte(nil), good...), 0), "1 bytes after its end"},
		{"a list longer than the bytes", []byte{0, 0x7f}, "a list of 127 elements"},
		{"a string longer than the bytes", []byte{9, 'a'}, "middle of a value"},
		{"unknown flags", unknownFlags(), "flag bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := new(Spec).UnmarshalBinary(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// unknownFlags is an encoded empty Spec up to its first flags, which
// have a bit no field has.
func unknownFlags() []byte {
	var w specWriter
	w.str("")       // Path
	w.uint(0)       // Argv
	w.uint(0)       // Env
	w.uint(0)       // Rules
	w.int(0)        // LandlockABI
	w.int(0)        // ProxyPort
	w.int(0)        // ResolverPort
	w.uint(1 << 10) // the eleventh of ten flags
	return w.b
}

// FuzzSpecBinary: whatever the bytes, decoding returns (no panic, no
// allocation beyond the input's size in lists), and what decodes encodes
// to bytes that decode to the same spec.
func FuzzSpecBinary(f *testing.F) {
	good, _ := (&Spec{Path: "/usr/bin/node", Argv: []string{"node", "server.js"}, Rules: []PathRule{{Path: "/usr", Why: "system"}},
		Mounts: []Mount{{Kind: MountBind, Path: "/usr"}, {Kind: MountTmpfs, Path: "/tmp", Size: 1 << 20}}, Join: []int{5}}).MarshalBinary()
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Spec
		if err := s.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var s2 Spec
		if err := s2.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("re-encoded spec: %v, %+v against %+v", err, s2, s)
		}
	})
}
