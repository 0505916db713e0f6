package cli

import (
	"strings"
	"testing"
	"time"
)

// An option the service bench runs would refuse or fail on is a usage
// error naming the flag, before any job: more files than a job takes
// answered 400 after the service had started, more chunks than a file may
// make reported nonsense phases with exit 0, a concurrency of 0 named
// DOCJOBS_MODEL_WORKERS or DOCJOBS_PROVIDER_CONCURRENCY, one over River's
// limit waited 30 s for a service that never became ready.
func TestBenchRefusesOptionsTheServiceCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no concurrency", []string{"--concurrency", "0"}, "--concurrency and --latency must be positive"},
		{"a negative concurrency", []string{"--concurrency", "-3"}, "--concurrency and --latency must be positive"},
		{"more workers than River runs on a queue", []string{"--concurrency", "100000"}, "--concurrency: at most 9968"},
		{"more files than a job takes", []string{"--files", "101"}, "--files: at most 100"},
		{"absurdly many files", []string{"--files", "100000"}, "--files: at most 100"},
		{"more chunks than a file may make", []string{"--chunks", "1001"}, "--chunks: at most 1000"},
		{"absurdly many chunks", []string{"--chunks", "100000"}, "--chunks: at most 1000"},
		{"a latency every call times out in", []string{"--latency", "2m"}, "--latency: under 2m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out, stderr := run(t, map[string]string{}, append([]string{"bench", "--jobs", "1"}, tc.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, ExitUsage, tc.want)
			}
			if out != "" {
				t.Errorf("ran anyway: %q", out)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s to refuse", d)
			}
		})
	}
}

// A service that cannot start (here: no database at --database-url) is
// reported at once with its own error, not as "did not become ready
// within 30s" half a minute later.
func TestBenchReportsWhyTheServiceDidNotStart(t *testing.T) {
	start := time.Now()
	code, _, stderr := run(t, map[string]string{}, "bench", "--jobs", "1", "--latency", "1ms",
		"--database-url", "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	if code == ExitOK || !strings.Contains(stderr, "the service stopped before it was ready") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to say so", d)
	}
}
