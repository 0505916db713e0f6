package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The client against a faulty or hostile service (or whatever answers at
// the address): its answers must not hold the client for ever, fill its
// memory, or drive the terminal the client prints to.

// boundedAnswers makes the answer bounds small for the test, and puts them
// back after it.
func boundedAnswers(t *testing.T, idle time.Duration, object, page int64) {
	t.Helper()
	savedIdle, savedObject, savedPage := answerIdle, maxObjectBytes, maxPageBytes
	answerIdle, maxObjectBytes, maxPageBytes = idle, object, page
	t.Cleanup(func() { answerIdle, maxObjectBytes, maxPageBytes = savedIdle, savedObject, savedPage })
}

// jobOfSize is a job answer of exactly n bytes.
func jobOfSize(n int) string {
	const frame = `{"id":"j","title":""}`
	return `{"id":"j","title":"` + strings.Repeat("a", n-len(frame)) + `"}`
}

func TestAnAnswerPastItsBoundIsRefusedNotHeld(t *testing.T) {
	boundedAnswers(t, time.Minute, 1<<20, 2<<20)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/v1/jobs/exact":
			_, _ = io.WriteString(w, jobOfSize(1<<20))
		case "/v1/jobs/over":
			_, _ = io.WriteString(w, jobOfSize(1<<20+1))
		case "/v1/jobs/long", "/v1/jobs/upload":
			// 64 times the bound, which a client without one reads whole.
			_, _ = io.WriteString(w, `{"id":"j","url":"`)
			chunk := strings.Repeat("a", 64<<10)
			for range 1 << 10 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `"}`)
		case "/v1/jobs":
			// A page may be larger than a job, up to its own bound.
			fmt.Fprintf(w, `{"jobs":[%s,%s]}`, jobOfSize(800<<10), jobOfSize(800<<10))
		case "/v1/files":
			fmt.Fprintf(w, `{"files":[{"id":"f","name":"%s"}]}`, strings.Repeat("n", 2<<20))
		}
	})
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"a job at the bound", []string{"get", "exact"}, ExitOK, ""},
		{"a job past it", []string{"get", "over"}, ExitError, "docjobs: GET /v1/jobs/over: read answer: the answer is larger than any the service sends (over 1 MiB)"},
		{"a long job", []string{"get", "long"}, ExitError, "the answer is larger than any the service sends (over 1 MiB)"},
		{"a long answer to an upload", []string{"submit", writeFile(t, "a.txt", "Alpha.\n")}, ExitError, "upload " + "%s: read answer: the answer is larger than any the service sends (over 1 MiB)"},
		{"a page past a job's bound", []string{"jobs"}, ExitOK, ""},
		{"a page past its own", []string{"files"}, ExitError, "docjobs: GET /v1/files?pageSize=50: read answer: the answer is larger than any the service sends (over 2 MiB)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				defer close(done)
				code, _, stderr = run(t, env, tt.args...)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the command did not end")
			}
			want := tt.stderr
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, tt.args[1])
			}
			if code != tt.code || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d: %s\nwant exit %d and %q", code, stderr, tt.code, want)
			}
		})
	}
}

func TestAnAnswerThatStopsMidwayFailsTheCommand(t *testing.T) {
	boundedAnswers(t, 200*time.Millisecond, maxObjectBytes, maxPageBytes)
	ended := make(chan struct{})
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		// The headers and the start of the answer, then nothing: a hung
		// service, or a proxy holding the connection.
		_, _ = io.WriteString(w, `{"jobs":[{"id":`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-ended:
		}
	})
	t.Cleanup(func() { close(ended) }) // before the service's Close, which waits for the handler
	for _, args := range [][]string{{"get", "j"}, {"get", "j", "--result"}, {"jobs"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				defer close(done)
				code, _, stderr = run(t, env, args...)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the command waited for the rest of the answer for ever")
			}
			if code != ExitError || !strings.Contains(stderr, "read answer: the service sent nothing more of its answer for a minute") {
				t.Fatalf("exit %d: %s", code, stderr)
			}
		})
	}
}

// hostileText holds what a terminal obeys or shows out of order: ESC
// sequences (colour, clear screen, OSC 52 writing the clipboard), a C1
// CSI, a right-to-left override, and a byte that is not UTF-8.
const hostileText = "x\x1b[31mred\x1b]52;c;cHduZWQ=\x07\u009b2J\u202eevil\xff"

// obeyable reports what of hostileText a terminal would obey in out.
func obeyable(out string) []string {
	var found []string
	for _, bad := range []string{"\x1b", "\u009b", "\u202e", "\x07", "\xff"} {
		if strings.Contains(out, bad) {
			found = append(found, fmt.Sprintf("%q", bad))
		}
	}
	return found
}

func TestTheServicesTextCannotDriveTheTerminal(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, time.Second)
	raw, err := json.Marshal(hostileText) // \xff becomes U+FFFD: the proxy's page has it raw
	if err != nil {
		t.Fatal(err)
	}
	quoted := string(raw)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/v1/jobs":
			if r.Method == http.MethodPost {
				_, _ = io.WriteString(w, `{"id":"j1"}`)
				return
			}
			fmt.Fprintf(w, `{"jobs":[{"id":%[1]s,"status":%[1]s,"created":%[1]s,"title":%[1]s}]}`, quoted)
		case "/v1/files":
			fmt.Fprintf(w, `{"files":[{"id":%[1]s,"name":%[1]s,"sizeBytes":"1","created":%[1]s}]}`, quoted)
		case "/v1/jobs/j1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: progress\ndata: {\"status\":%[1]s,\"error\":%[1]s}\n\n"+
				"event: done\ndata: {\"status\":\"JOB_STATUS_FAILED\",\"error\":%[1]s}\n\n", quoted)
		case "/v1/jobs/j1/result":
			_, _ = io.WriteString(w, `{"result":{}}`)
		case "/v1/jobs/message":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"code":3,"message":%s}`, quoted)
		default: // a proxy's page, not JSON
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>\n"+hostileText+"\n</html>")
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // as the output shows it, escaped
	}{
		{"the job table", []string{"jobs"}, ExitOK, "x [31mred ]52;c;cHduZWQ=  2J evil\uFFFD"},
		{"the upload table", []string{"files"}, ExitOK, "x [31mred ]52;c;cHduZWQ=  2J evil\uFFFD"},
		{"the progress and the job's error", []string{"submit", "https://example.com/a.txt", "--wait"}, ExitJobFailed,
			`error: x\x1b[31mred\x1b]52;c;cHduZWQ=\x07\u009b2J\u202eevil` + "\uFFFD"},
		{"the service's message", []string{"get", "message"}, ExitError, `docjobs: x\x1b[31mred\x1b]52;c;cHduZWQ=\x07\u009b2J\u202eevil` + "\uFFFD"},
		{"a proxy's page", []string{"get", "proxy"}, ExitError, `docjobs: Bad Gateway: <html>\nx\x1b[31mred\x1b]52;c;cHduZWQ=\x07\u009b2J\u202eevil\xff\n</html> (HTTP 502)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := run(t, env, tt.args...)
			if code != tt.code || !strings.Contains(out+stderr, tt.want) {
				t.Fatalf("exit %d: stdout %q, stderr %q\nwant exit %d and %q", code, out, stderr, tt.code, tt.want)
			}
			if bad := obeyable(out + stderr); len(bad) > 0 {
				t.Errorf("printed as it came: %s\nstdout %q\nstderr %q", strings.Join(bad, ", "), out, stderr)
			}
		})
	}
}

// An event stream whose line is past what the client reads would send it
// again on every reconnection: the client polls the job instead.
func TestAnEventPastItsBoundIsReadByPolling(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, 2*time.Second)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/v1/jobs":
			_, _ = io.WriteString(w, `{"id":"j1"}`)
		case "/v1/jobs/j1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: progress\ndata: {\"status\":\"JOB_STATUS_RUNNING\",\"error\":%q}\n\n", strings.Repeat("e", maxEventLine))
		case "/v1/jobs/j1":
			_, _ = io.WriteString(w, `{"id":"j1","status":"JOB_STATUS_COMPLETE"}`)
		case "/v1/jobs/j1/result":
			_, _ = io.WriteString(w, `{"result":{}}`)
		}
	})
	code, out, stderr := run(t, env, "submit", "https://example.com/a.txt", "--wait")
	if code != ExitOK || out != "{\"result\":{}}\n" || !strings.Contains(stderr, "the progress stream sent nothing readable: reading GET /v1/jobs/j1 instead") {
		t.Fatalf("exit %d: stdout %q, stderr %q", code, out, stderr)
	}
}

func TestRetryAfterIsReadWithoutWrapping(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{
		{"120", 2 * time.Minute},
		{" 3 ", 3 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{"86400", 24 * time.Hour},
		{"99999999999", maxRetryAfter},             // wrapped to 2157299h53m50s
		{"36028797018963969", maxRetryAfter},       // wrapped to 1s
		{"99999999999999999999999", maxRetryAfter}, // past an int64: was none
		{time.Now().Add(1000 * 24 * time.Hour).UTC().Format(http.TimeFormat), maxRetryAfter},
	} {
		if got := parseRetryAfter(tt.header); got != tt.want {
			t.Errorf("Retry-After %q: %s, want %s", tt.header, got, tt.want)
		}
	}
}
