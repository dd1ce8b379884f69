package client

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestStdioCompanionLeavesNothing: a stdio companion that leaves a
// process of its own running and dies at start fails the dial, and the
// process it left ends too (its process group, proc.StartOwned), where
// before it ran on.
func TestStdioCompanionLeavesNothing(t *testing.T) {
	_, err := Dial(context.Background(), Endpoint{Transport: "stdio", Command: "sh", Args: []string{"-c", "sleep 60 & echo pid=$! >&2; exit 4"}}, Options{})
	if err == nil {
		t.Fatal("a companion that exits at once was dialled")
	}
	m := regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no pid in %v", err)
	}
	pid, _ := strconv.Atoi(m[1])
	if left := gemkittest.WaitExit([]int{pid}, 10*time.Second); len(left) > 0 {
		t.Errorf("the companion's background process %d still runs", pid)
	}
}
