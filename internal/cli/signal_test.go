package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/logtest"
)

func TestASecondSignalExitsAtOnce(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var logs logtest.Buffer
	exited := make(chan int, 1)
	ctx, stop := StopOnSignal(context.Background(), sigs, &logs, func(code int) { exited <- code })
	defer stop()

	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first signal did not end the context")
	}
	select {
	case code := <-exited:
		t.Fatalf("the first signal exited with %d; want the graceful stop", code)
	case <-time.After(50 * time.Millisecond):
	}

	time.Sleep(repeatWindow) // an operator's second Ctrl-C, not the group's copy of the first
	sigs <- os.Interrupt
	select {
	case code := <-exited:
		if code != ExitForced {
			t.Errorf("exit code %d, want ExitForced (%d)", code, ExitForced)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	if !strings.Contains(logs.String(), `"msg":"second signal: stopping at once`) {
		t.Errorf("no log line for the forced stop:\n%s", logs.String())
	}
}

func TestSignalsAfterStopAreIgnored(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var mu sync.Mutex
	var exits []int
	var logs bytes.Buffer
	ctx, stop := StopOnSignal(context.Background(), sigs, &logs, func(code int) {
		mu.Lock()
		defer mu.Unlock()
		exits = append(exits, code)
	})
	stop()
	if ctx.Err() == nil {
		t.Error("stop left the context running")
	}
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGTERM
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(exits) != 0 {
		t.Errorf("exited %v after stop", exits)
	}
}

// A signal delivered to the process and to its group (`timeout`, a
// supervisor) arrives twice at once: that is one stop, the graceful one.
func TestTheSameStopDeliveredTwiceAtOnceIsGraceful(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var logs logtest.Buffer
	exited := make(chan int, 1)
	ctx, stop := StopOnSignal(context.Background(), sigs, &logs, func(code int) { exited <- code })
	defer stop()

	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	select {
	case code := <-exited:
		t.Fatalf("two signals at once exited with %d; want the graceful stop", code)
	case <-time.After(300 * time.Millisecond):
	}
}
