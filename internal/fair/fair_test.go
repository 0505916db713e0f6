package fair

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSemServesAccountsRoundRobin(t *testing.T) {
	cases := []struct {
		name string
		// arrivals are the calls queued behind a held place, in order:
		// account letter and sequence number; a trailing "x" marks a call
		// that gives up before its turn.
		arrivals string
		want     string
	}{
		{"one account's backlog does not starve another's single call", "A1 A2 A3 A4 A5 B1", "A1 B1 A2 A3 A4 A5"},
		{"accounts take turns in the order they started waiting", "A1 A2 A3 B1 B2 C1", "A1 B1 C1 A2 B2 A3"},
		{"an account's own calls keep their order", "B1 B2 B3", "B1 B2 B3"},
		{"a call that gives up is skipped", "A1 B1x A2 C1", "A1 C1 A2"},
		{"an account whose only call gave up leaves the rotation", "B1x A1 A2", "A1 A2"},
		{"calls without an account are one account", "_1 _2 A1", "_1 A1 _2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewSem(1)
			if err := s.Acquire(t.Context(), "holder"); err != nil {
				t.Fatal(err)
			}
			served := make(chan string)
			var cancels []context.CancelFunc
			for _, a := range strings.Fields(c.arrivals) {
				account := strings.TrimPrefix(a[:1], "_")
				label := strings.TrimSuffix(a, "x")
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if strings.HasSuffix(a, "x") {
					cancels = append(cancels, cancel)
				}
				before := s.Waiting()
				go func() {
					if s.Acquire(ctx, account) == nil {
						served <- label
					}
				}()
				waitFor(t, func() bool { return s.Waiting() == before+1 })
			}
			for _, cancel := range cancels {
				before := s.Waiting()
				cancel()
				waitFor(t, func() bool { return s.Waiting() == before-1 })
			}
			var got []string
			for range strings.Fields(c.want) {
				s.Release() // the holder's place, then each served call's
				select {
				case l := <-served:
					got = append(got, l)
				case <-time.After(5 * time.Second):
					t.Fatalf("served %q, then nothing", got)
				}
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("served %s, want %s", g, c.want)
			}
			s.Release()
			if s.free != 1 || len(s.ring) != 0 || len(s.queues) != 0 {
				t.Errorf("after all calls: free %d, ring %q, queues %d; want 1 free and nothing waiting", s.free, s.ring, len(s.queues))
			}
		})
	}
}

func TestSemPlaceGrantedAsTheCallerGivesUpIsPassedOn(t *testing.T) {
	s := NewSem(1)
	_ = s.Acquire(t.Context(), "holder")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Acquire(ctx, "A") }()
	waitFor(t, func() bool { return s.Waiting() == 1 })
	// Hand the place over and end the waiter's context at once: whichever
	// wins, the place must not leak.
	s.Release()
	cancel()
	if err := <-done; err == nil {
		s.Release()
	}
	if err := s.Acquire(t.Context(), "B"); err != nil || s.free != 0 {
		t.Fatalf("the place leaked: err %v, free %d", err, s.free)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAnAccountWithEnoughWaitersStepsBack(t *testing.T) {
	s := NewSem(1)
	if ok, err := s.AcquireQueued(t.Context(), "A", 1); !ok || err != nil {
		t.Fatalf("a free place: ok %v, err %v", ok, err)
	}
	granted := make(chan string, 2)
	for _, account := range []string{"A", "B"} {
		before := s.Waiting()
		go func() {
			if ok, err := s.AcquireQueued(t.Context(), account, 1); ok && err == nil {
				granted <- account
			}
		}()
		waitFor(t, func() bool { return s.Waiting() == before+1 })
	}
	// A and B have their one waiter each: another call of either does not
	// queue, and does not wait.
	for _, account := range []string{"A", "B"} {
		if ok, err := s.AcquireQueued(t.Context(), account, 1); ok || err != nil {
			t.Fatalf("%s: ok %v, err %v; want false at once", account, ok, err)
		}
	}
	if s.Waiting() != 2 {
		t.Fatalf("waiting = %d, want the two first waiters only", s.Waiting())
	}
	s.Release()
	s.Release()
	got := map[string]bool{}
	for range 2 {
		select {
		case a := <-granted:
			got[a] = true
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter was not served")
		}
	}
	if !got["A"] || !got["B"] {
		t.Fatalf("served %v, want A's and B's waiters", got)
	}
}
