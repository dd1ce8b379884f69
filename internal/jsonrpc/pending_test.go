package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPending(t *testing.T) {
	closed := errors.New("gone")
	p := NewPending[string](closed)
	sent := make(chan int64, 1)
	got := make(chan string, 1)
	go func() {
		m, err := p.Call(context.Background(), time.Minute, "x", func(id int64) error { sent <- id; return nil })
		if err != nil {
			m = err.Error()
		}
		got <- m
	}()
	id := <-sent
	if _, ok := p.Deliver(json.RawMessage(`"a"`), "no"); ok {
		t.Fatal("a string id nobody used was delivered")
	}
	if _, ok := p.Deliver(json.RawMessage(strconv.FormatInt(id+1, 10)), "no"); ok {
		t.Fatal("an unused id was delivered")
	}
	if _, ok := p.Deliver(json.RawMessage(strconv.FormatInt(id, 10)), "answer"); !ok {
		t.Fatal("the answer was not delivered")
	}
	if m := <-got; m != "answer" {
		t.Fatalf("Call = %q", m)
	}
	if _, err := p.Call(context.Background(), time.Millisecond, "slow", func(int64) error { return nil }); err == nil || !strings.Contains(err.Error(), "did not answer slow within 1ms") {
		t.Fatalf("timeout: %v", err)
	}
	go func() {
		_, err := p.Call(context.Background(), 0, "y", func(id int64) error { sent <- id; return nil })
		got <- err.Error()
	}()
	<-sent
	if !p.Close() || p.Close() {
		t.Fatal("Close reports the first close only")
	}
	if m := <-got; m != "gone" {
		t.Fatalf("a waiting call after Close: %q", m)
	}
	if _, err := p.Call(context.Background(), 0, "z", func(int64) error { return nil }); !errors.Is(err, closed) {
		t.Fatalf("a call after Close: %v", err)
	}
}
