package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A stop gives the work in flight DOCJOBS_SHUTDOWN_TIMEOUT, not a fixed
// 30 s after the requests' own: a model call that outlives it is cut, its
// job handed back to the queue, and the process ends soon after.
func TestWorkInFlightIsCutAtTheShutdownTimeout(t *testing.T) {
	asked := make(chan struct{}, 1)
	done := make(chan struct{})
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select { // a model that thinks for longer than any stop waits
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(provider.Close)
	t.Cleanup(func() { close(done) }) // runs before Close: no handler holds it

	s := startService(t, "DOCJOBS_PROVIDER_2_BASE_URL", provider.URL, "DOCJOBS_SHUTDOWN_TIMEOUT", "1s")
	file := writeFile(t, "a.txt", "Total: 12 EUR.\n")
	code, _, stderr := run(t, s.env("DOCJOBS_NEURAL_KEY", "sk-test"), "submit", file, "--prompt", "List the totals.",
		"--neural-type", "PROVIDER_2", "--neural-model", "gpt-4o-mini")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, stderr)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the model provider was never asked")
	}

	start := time.Now()
	if err := s.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	// Without the setting the drain waits 30 s; with it, 1 s and the
	// cancelled call's return.
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the stop took %s with DOCJOBS_SHUTDOWN_TIMEOUT=1s", took.Round(time.Millisecond))
	}
}
