package worker

import (
	"context"
	"net/http/httptrace"
	"testing"
	"time"
)

func TestTheLaneLetsWorkThroughOnceItIsEmpty(t *testing.T) {
	var l startLane
	start := time.Now()
	l.wait(context.Background(), time.Hour)
	if time.Since(start) > time.Second {
		t.Fatal("waiting on an empty lane blocked")
	}

	leaveA, leaveB := l.enter(), l.enter()
	waited := make(chan struct{})
	go func() { l.wait(context.Background(), time.Hour); close(waited) }()
	leaveA()
	leaveA() // leaving twice counts once
	select {
	case <-waited:
		t.Fatal("the lane let work through while a file was still in it")
	case <-time.After(20 * time.Millisecond):
	}
	leaveB()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the lane emptied but the work still waits")
	}
}

func TestAFullLaneDelaysWorkByNoMoreThanTheLimit(t *testing.T) {
	var l startLane
	defer l.enter()()
	start := time.Now()
	l.wait(context.Background(), 30*time.Millisecond)
	if d := time.Since(start); d < 30*time.Millisecond || d > 10*time.Second {
		t.Fatalf("waited %s on a lane that never empties, want the 30ms limit", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	l.wait(ctx, time.Hour)
	if time.Since(start) > time.Second {
		t.Fatal("an ended context did not end the wait")
	}
}

func TestAFileLeavesTheLaneWhenEveryRowIsOut(t *testing.T) {
	left := 0
	out := newRowsOut(2, func() { left++ })
	first, second := out.row(), out.row()
	first()
	first()
	if left != 0 {
		t.Fatal("the file left with a row still to go out")
	}
	// A row is out when its request is written.
	trace := httptrace.ContextClientTrace(whenWritten(context.Background(), second))
	trace.WroteRequest(httptrace.WroteRequestInfo{})
	if left != 1 {
		t.Fatalf("left %d times, want once when the last row went out", left)
	}
	second()
	if left != 1 {
		t.Fatal("a row going out twice counted twice")
	}

	none := 0
	newRowsOut(0, func() { none++ })
	if none != 1 {
		t.Fatal("a file without rows must leave at once")
	}
	(*rowsOut)(nil).row()() // retried files have no lane to leave
}
