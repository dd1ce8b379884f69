package gemkittest

import (
	"fmt"
	"strings"
	"testing"
)

func TestOutputWaitFor(t *testing.T) {
	var o Output
	go func() {
		for i := range 50 {
			fmt.Fprintf(&o, "line %d\n", i)
		}
	}()
	got := o.WaitFor(t, "the last line", func(s string) bool { return strings.Contains(s, "line 49\n") })
	if strings.Count(got, "\n") != 50 {
		t.Errorf("WaitFor returned %q", got)
	}
}
