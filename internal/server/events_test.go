package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/docjobs/docjobs/internal/job"
)

// progressJobs is a ProgressSource over jobs held in memory; tests change a
// job's progress while a stream watches it.
type progressJobs struct {
	mu    sync.Mutex
	jobs  map[string]progressJob // by id
	fails int                    // the next reads that fail
	reads int
	// watchers are the WatchEnd channels by job id.
	watchers map[string][]chan struct{}
	// afterRead, when set, runs once after a read has taken its answer, as
	// a job that ends while the read is in flight.
	afterRead func()
}

type progressJob struct {
	account string
	p       job.Progress
}

func newProgressJobs() *progressJobs { return &progressJobs{jobs: map[string]progressJob{}} }

func (s *progressJobs) set(account, id string, p job.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[id] = progressJob{account: account, p: p}
}

// end sets a job's terminal progress and signals its watchers, as the
// store does when this process ends a job.
func (s *progressJobs) end(account, id string, p job.Progress) {
	s.set(account, id, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.watchers[id] {
		close(ch)
	}
	delete(s.watchers, id)
}

func (s *progressJobs) WatchEnd(id string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers == nil {
		s.watchers = map[string][]chan struct{}{}
	}
	ch := make(chan struct{})
	s.watchers[id] = append(s.watchers[id], ch)
	return ch, func() {}
}

func (s *progressJobs) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, id)
}

// failNext makes the next n reads fail with a database error.
func (s *progressJobs) failNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = n
}

func (s *progressJobs) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

func (s *progressJobs) JobProgress(_ context.Context, account, id string) (job.Progress, error) {
	p, after, err := s.read(account, id)
	if after != nil {
		after()
	}
	return p, err
}

func (s *progressJobs) read(account, id string) (job.Progress, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	after := s.afterRead
	s.afterRead = nil
	p, err := s.readLocked(account, id)
	return p, after, err
}

func (s *progressJobs) readLocked(account, id string) (job.Progress, error) {
	s.reads++
	if s.fails > 0 {
		s.fails--
		return job.Progress{}, errors.New("postgres://db.internal:5432: connection reset")
	}
	j, ok := s.jobs[id]
	if !ok || j.account != account {
		return job.Progress{}, fmt.Errorf("progress of %s: %w", id, job.ErrNotFound)
	}
	return j.p, nil
}

// withProgress serves src with fast polling.
func withProgress(src ProgressSource, tune func(*ProgressConfig)) envOption {
	return func(c *Config, d *Deps) {
		d.Progress = src
		c.Progress.PollInterval = 5 * time.Millisecond
		if tune != nil {
			tune(&c.Progress)
		}
	}
}

// sseEvent is one event, or one comment, as a client parses it.
type sseEvent struct {
	name, data, comment string
}

// eventStream is an open GET /v1/jobs/{id}/events.
type eventStream struct {
	t      testing.TB
	resp   *http.Response
	br     *bufio.Reader
	cancel context.CancelFunc
}

func (e *testEnv) openEvents(id, key string) *eventStream {
	e.t.Helper()
	return e.openEventsWith(http.DefaultClient, id, key)
}

// openEventsH2C opens the stream over HTTP/2 with prior knowledge, as
// gRPC clients and h2c proxies in front of the port speak.
func (e *testEnv) openEventsH2C(id, key string) *eventStream {
	e.t.Helper()
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protocols}
	e.t.Cleanup(tr.CloseIdleConnections)
	s := e.openEventsWith(&http.Client{Transport: tr}, id, key)
	if s.resp.ProtoMajor != 2 {
		e.t.Fatalf("the stream is %s, want HTTP/2", s.resp.Proto)
	}
	return s
}

func (e *testEnv) openEventsWith(client *http.Client, id, key string) *eventStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.baseURL+"/v1/jobs/"+id+"/events", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("open events: %v", err)
	}
	e.t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
	return &eventStream{t: e.t, resp: resp, br: bufio.NewReader(resp.Body), cancel: cancel}
}

// next reads the next event or comment; io.EOF when the stream ended.
func (s *eventStream) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && ev == (sseEvent{}) {
				return ev, io.EOF
			}
			return ev, fmt.Errorf("stream broke inside an event (%q): %w", line, err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return ev, nil
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		default:
			return ev, fmt.Errorf("unexpected line %q", line)
		}
	}
}

// mustNext reads the next event, failing the test at the end of the stream.
func (s *eventStream) mustNext() sseEvent {
	s.t.Helper()
	ev, err := s.next()
	if err != nil {
		s.t.Fatalf("read event: %v", err)
	}
	return ev
}

// wantEnd fails the test unless the stream ends with no further event.
func (s *eventStream) wantEnd() {
	s.t.Helper()
	ev, err := s.next()
	if !errors.Is(err, io.EOF) {
		s.t.Fatalf("stream goes on: %+v, %v", ev, err)
	}
}

func progress(status job.Status, ocrDone, ocrTotal, llmDone, llmTotal int) job.Progress {
	return job.Progress{Status: status, OCRDone: ocrDone, OCRTotal: ocrTotal, LLMDone: llmDone, LLMTotal: llmTotal}
}

func TestEventsStreamEveryChangeAndEndWithDone(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusNew, 0, 3, 0, 0))
	env := startServer(t, withProgress(src, nil))

	s := env.openEvents("job-1", keyAlice)
	if s.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", s.resp.StatusCode)
	}
	for name, want := range map[string]string{
		"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
	} {
		if got := s.resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	steps := []struct {
		set  job.Progress
		want sseEvent
	}{
		{progress(job.StatusNew, 0, 3, 0, 0), sseEvent{name: "progress",
			data: `{"status":"JOB_STATUS_NEW","ocrDone":0,"ocrTotal":3,"llmDone":0,"llmTotal":0}`}},
		{progress(job.StatusRunning, 1, 3, 0, 1), sseEvent{name: "progress",
			data: `{"status":"JOB_STATUS_RUNNING","ocrDone":1,"ocrTotal":3,"llmDone":0,"llmTotal":1}`}},
		{progress(job.StatusRunning, 3, 3, 2, 3), sseEvent{name: "progress",
			data: `{"status":"JOB_STATUS_RUNNING","ocrDone":3,"ocrTotal":3,"llmDone":2,"llmTotal":3}`}},
	}
	for i, st := range steps {
		src.set("alice", "job-1", st.set)
		// Polls that see no change send nothing: the next event is the change.
		if got := s.mustNext(); got != st.want {
			t.Fatalf("event %d:\n got  %+v\n want %+v", i, got, st.want)
		}
		time.Sleep(30 * time.Millisecond) // several polls without a change
	}
	final := progress(job.StatusComplete, 3, 3, 3, 3)
	final.Updated = time.Now() // not part of the event
	src.set("alice", "job-1", final)
	wantData := `{"status":"JOB_STATUS_COMPLETE","ocrDone":3,"ocrTotal":3,"llmDone":3,"llmTotal":3}`
	if got := s.mustNext(); got != (sseEvent{name: "progress", data: wantData}) {
		t.Fatalf("terminal progress: %+v", got)
	}
	if got := s.mustNext(); got != (sseEvent{name: "done", data: wantData}) {
		t.Fatalf("done: %+v", got)
	}
	s.wantEnd()
}

// A job this process ends is told at once, not at the next poll, which
// here would be an hour away.
func TestEventsOfAJobEndedInThisProcessEndWithoutWaitingForThePoll(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 1, 1, 0, 2))
	env := startServer(t, withProgress(src, func(c *ProgressConfig) { c.PollInterval = time.Hour }))

	s := env.openEvents("job-1", keyAlice)
	if got := s.mustNext(); got.name != "progress" || !strings.Contains(got.data, "JOB_STATUS_RUNNING") {
		t.Fatalf("first event: %+v", got)
	}
	// Without the signal the reads below would wait an hour; cut them.
	cut := time.AfterFunc(10*time.Second, s.cancel)
	defer cut.Stop()
	src.end("alice", "job-1", progress(job.StatusComplete, 1, 1, 2, 2))
	wantData := `{"status":"JOB_STATUS_COMPLETE","ocrDone":1,"ocrTotal":1,"llmDone":2,"llmTotal":2}`
	for _, name := range []string{"progress", "done"} {
		if got := s.mustNext(); got != (sseEvent{name: name, data: wantData}) {
			t.Fatalf("got %+v, want %s %s", got, name, wantData)
		}
	}
	s.wantEnd()
}

// The stream watches the job's end before its first read, so an end
// committed while that read is in flight (after its answer was taken) is
// not missed: the terminal events come at once, not at the next poll.
func TestEventsOfAJobThatEndsDuringTheFirstReadEndWithoutWaitingForThePoll(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	src.afterRead = func() { src.end("alice", "job-1", progress(job.StatusComplete, 1, 1, 1, 1)) }
	env := startServer(t, withProgress(src, func(c *ProgressConfig) { c.PollInterval = time.Hour }))

	s := env.openEvents("job-1", keyAlice)
	cut := time.AfterFunc(10*time.Second, s.cancel) // the poll would come in an hour
	defer cut.Stop()
	if got := s.mustNext(); got.name != "progress" || !strings.Contains(got.data, "JOB_STATUS_RUNNING") {
		t.Fatalf("first event: %+v", got)
	}
	wantData := `{"status":"JOB_STATUS_COMPLETE","ocrDone":1,"ocrTotal":1,"llmDone":1,"llmTotal":1}`
	for _, name := range []string{"progress", "done"} {
		if got := s.mustNext(); got != (sseEvent{name: name, data: wantData}) {
			t.Fatalf("got %+v, want %s %s", got, name, wantData)
		}
	}
	s.wantEnd()
}

func TestEventsOfATerminalJobAreOneProgressAndDone(t *testing.T) {
	src := newProgressJobs()
	failed := progress(job.StatusFailed, 1, 1, 0, 0)
	failed.Error = "no file could be recognized:\nevent: done\ndata: {}"
	src.set("alice", "job-1", failed)
	env := startServer(t, withProgress(src, nil))

	s := env.openEvents("job-1", keyAlice)
	wantData := `{"status":"JOB_STATUS_FAILED","ocrDone":1,"ocrTotal":1,"llmDone":0,"llmTotal":0,` +
		`"error":"no file could be recognized:\nevent: done\ndata: {}"}`
	for _, name := range []string{"progress", "done"} {
		if got := s.mustNext(); got != (sseEvent{name: name, data: wantData}) {
			t.Errorf("got %+v, want %s %s", got, name, wantData)
		}
	}
	s.wantEnd()
}

func TestEventsAnswerLikeTheRestOfTheAPIBeforeStreaming(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, nil))
	bare := startServer(t) // no progress source

	tests := []struct {
		name     string
		env      *testEnv
		id, key  string
		httpCode int
		code     codes.Code
		message  string // "" skips
	}{
		{"another account's job is not found, as on the other job routes", env, "job-1", keyBob, 404, codes.NotFound, "job not found"},
		{"an unknown job is not found, as on the other job routes", env, "job-404", keyAlice, 404, codes.NotFound, "job not found"},
		{"a caller without a key is unauthenticated", env, "job-1", "", 401, codes.Unauthenticated, ""},
		{"a server without a progress source says so", bare, "job-1", keyAlice, 501, codes.Unimplemented, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.env.do("GET", "/v1/jobs/"+tt.id+"/events", tt.key, "", nil)
			m := wantStatusBody(t, resp, tt.httpCode, tt.code, true)
			if msg := m["message"].(string); strings.Contains(msg, "job-") {
				t.Errorf("message echoes the id: %q", msg)
			}
			if tt.message != "" && m["message"] != tt.message {
				t.Errorf("message = %q, want %q", m["message"], tt.message)
			}
		})
	}
}

// An id with NUL or a byte that is not UTF-8 answered 500 on PostgreSQL,
// which refuses such text: no such job can exist, so the store is not asked.
func TestEventsOfAnIDTheServiceCannotHaveMadeAreNotFoundWithoutARead(t *testing.T) {
	src := newProgressJobs()
	env := startServer(t, withProgress(src, nil))
	for _, id := range []string{"%00", "%FF", "a%00b"} {
		resp := env.do("GET", "/v1/jobs/"+id+"/events", keyAlice, "", nil)
		if m := wantStatusBody(t, resp, 404, codes.NotFound, true); m["message"] != "job not found" {
			t.Errorf("%s: message = %q, want job not found", id, m["message"])
		}
	}
	if n := src.readCount(); n != 0 {
		t.Fatalf("%d progress reads, want none", n)
	}
}

func TestEventsHeadAnswersHeadersOnly(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, nil))
	resp := env.do("HEAD", "/v1/jobs/job-1/events", keyAlice, "", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestEventsKeepAnIdleStreamAlive(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, func(c *ProgressConfig) { c.KeepAlive = 20 * time.Millisecond }))

	s := env.openEvents("job-1", keyAlice)
	if ev := s.mustNext(); ev.name != "progress" {
		t.Fatalf("first: %+v", ev)
	}
	for range 2 {
		if ev := s.mustNext(); ev != (sseEvent{comment: "keep-alive"}) {
			t.Fatalf("idle stream sent %+v, want the keep-alive comment", ev)
		}
	}
}

// An HTTP/2 stream's write deadline fires whether or not a write is under
// way, so the deadline each event is written under must not outlive it: a
// quiet stream was reset WriteTimeout after its last event (10 s by
// default, before the 15 s keep-alive) whenever it came over h2c.
func TestEventsOverHTTP2OutliveTheWriteTimeoutBetweenEvents(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, func(c *ProgressConfig) {
		c.WriteTimeout = 50 * time.Millisecond
		c.KeepAlive = 300 * time.Millisecond
	}))

	s := env.openEventsH2C("job-1", keyAlice)
	if ev := s.mustNext(); ev.name != "progress" {
		t.Fatalf("first: %+v", ev)
	}
	for range 2 {
		if ev := s.mustNext(); ev != (sseEvent{comment: "keep-alive"}) {
			t.Fatalf("quiet stream sent %+v, want the keep-alive comment", ev)
		}
	}
	src.end("alice", "job-1", progress(job.StatusComplete, 1, 1, 1, 1))
	for _, want := range []string{"progress", "done"} {
		if ev := s.mustNext(); ev.name != want {
			t.Fatalf("got %+v, want %s", ev, want)
		}
	}
	s.wantEnd()
}

// A stream that ends without a last event (MaxDuration, the job deleted)
// ends cleanly over HTTP/1 too: net/http writes the chunked terminator
// after the handler returns, and the deadline of an event written long
// before had passed, so the client saw a broken body.
func TestEventsEndCleanlyLongAfterTheirLastWrite(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, func(c *ProgressConfig) {
		c.WriteTimeout = 50 * time.Millisecond
		c.MaxDuration = 300 * time.Millisecond
	}))
	for _, open := range []func(id, key string) *eventStream{env.openEvents, env.openEventsH2C} {
		s := open("job-1", keyAlice)
		if ev := s.mustNext(); ev.name != "progress" {
			t.Fatalf("%s first: %+v", s.resp.Proto, ev)
		}
		s.wantEnd()
	}
}

func TestEventsEnd(t *testing.T) {
	running := progress(job.StatusRunning, 0, 2, 0, 0)
	tests := []struct {
		name string
		tune func(*ProgressConfig)
		// during runs once the first event is read; it must end the stream.
		during func(src *progressJobs, env *testEnv)
		logged string // "" = the end is not worth a log line
	}{
		{
			name:   "after MaxDuration",
			tune:   func(c *ProgressConfig) { c.MaxDuration = 50 * time.Millisecond },
			during: func(*progressJobs, *testEnv) {},
		},
		{
			name:   "when the job is deleted",
			during: func(src *progressJobs, _ *testEnv) { src.remove("job-1") },
		},
		{
			name:   "after repeated database errors, which are logged and not sent",
			during: func(src *progressJobs, _ *testEnv) { src.failNext(1000) },
			logged: "progress stream ended early",
		},
		{
			name: "when the server shuts down, without waiting for its timeout",
			during: func(_ *progressJobs, env *testEnv) {
				start := time.Now()
				if err := env.stop(); err != nil {
					t.Errorf("Serve: %v", err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("shutdown took %s with a stream open", d)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newProgressJobs()
			src.set("alice", "job-1", running)
			env := startServer(t, withProgress(src, tt.tune))
			s := env.openEvents("job-1", keyAlice)
			if ev := s.mustNext(); ev.name != "progress" {
				t.Fatalf("first: %+v", ev)
			}
			tt.during(src, env)
			s.wantEnd()
			logs := env.logs.String()
			if tt.logged != "" && !strings.Contains(logs, tt.logged) {
				t.Errorf("logs lack %q:\n%s", tt.logged, logs)
			}
			if strings.Contains(logs, `"level":"ERROR"`) {
				t.Errorf("an expected end was logged as an error:\n%s", logs)
			}
		})
	}
}

func TestEventsSurviveAFewDatabaseErrors(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, nil))
	s := env.openEvents("job-1", keyAlice)
	s.mustNext()
	src.failNext(maxPollFailures - 1)
	src.set("alice", "job-1", progress(job.StatusComplete, 1, 1, 0, 0))
	for _, name := range []string{"progress", "done"} {
		if ev := s.mustNext(); ev.name != name || strings.Contains(ev.data, "db.internal") {
			t.Fatalf("got %+v, want %s without the database error", ev, name)
		}
	}
}

func TestEventsStopPollingWhenTheClientLeaves(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, nil))
	s := env.openEvents("job-1", keyAlice)
	s.mustNext()
	s.cancel()

	// The handler sees the disconnect and stops reading the database.
	deadline := time.Now().Add(5 * time.Second)
	for {
		before := src.readCount()
		time.Sleep(50 * time.Millisecond) // ten poll intervals
		if src.readCount() == before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream still polls after its client left")
		}
	}
}

func TestEventsLimitOpenStreams(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-a", progress(job.StatusRunning, 0, 1, 0, 0))
	src.set("bob", "job-b", progress(job.StatusRunning, 0, 1, 0, 0))
	env := startServer(t, withProgress(src, func(c *ProgressConfig) { c.MaxStreamsPerAccount = 1 }))

	first := env.openEvents("job-a", keyAlice)
	first.mustNext()

	resp := env.do("GET", "/v1/jobs/job-a/events", keyAlice, "", nil)
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	wantStatusBody(t, resp, http.StatusTooManyRequests, codes.ResourceExhausted, true)
	if other := env.openEvents("job-b", keyBob); other.resp.StatusCode != http.StatusOK {
		t.Errorf("another account was refused: %d", other.resp.StatusCode)
	}

	first.cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		again := env.openEvents("job-a", keyAlice)
		if again.resp.StatusCode == http.StatusOK {
			return // the slot was given back
		}
		again.cancel()
		if time.Now().After(deadline) {
			t.Fatalf("the slot of a closed stream was not released: %d", again.resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEncodeEvent(t *testing.T) {
	tests := []struct {
		name  string
		event string
		p     job.Progress
		want  string
	}{
		{
			name: "counts are sent even when zero", event: "progress", p: progress(job.StatusNew, 0, 2, 0, 0),
			want: "event: progress\ndata: {\"status\":\"JOB_STATUS_NEW\",\"ocrDone\":0,\"ocrTotal\":2,\"llmDone\":0,\"llmTotal\":0}\n\n",
		},
		{
			name: "line breaks in the error stay inside the data line", event: "done",
			p:    job.Progress{Status: job.StatusFailed, Error: "a\r\nb\n\nevent: x"},
			want: "event: done\ndata: {\"status\":\"JOB_STATUS_FAILED\",\"ocrDone\":0,\"ocrTotal\":0,\"llmDone\":0,\"llmTotal\":0,\"error\":\"a\\r\\nb\\n\\nevent: x\"}\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(encodeEvent(tt.event, tt.p)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// FuzzEncodeEvent checks that whatever a job's status and error hold, an
// event is exactly one event line and one data line whose JSON gives the
// progress back.
func FuzzEncodeEvent(f *testing.F) {
	f.Add("JOB_STATUS_RUNNING", "", 1, 3, 0, 0)
	f.Add("JOB_STATUS_FAILED", "x\n\ndata: {}\r\n", 0, 1, 0, 0)
	f.Add("\u2028", "\xff\xfe", -1, 1<<40, 7, 9)
	f.Fuzz(func(t *testing.T, statusText, errText string, ocrDone, ocrTotal, llmDone, llmTotal int) {
		p := job.Progress{Status: job.Status(statusText), Error: errText,
			OCRDone: ocrDone, OCRTotal: ocrTotal, LLMDone: llmDone, LLMTotal: llmTotal}
		frame := string(encodeEvent("progress", p))
		if strings.ContainsRune(frame, '\r') {
			t.Fatalf("frame holds a carriage return: %q", frame)
		}
		lines := strings.Split(frame, "\n")
		if len(lines) != 4 || lines[0] != "event: progress" || !strings.HasPrefix(lines[1], "data: ") ||
			lines[2] != "" || lines[3] != "" {
			t.Fatalf("not one event: %q", frame)
		}
		var got progressEvent
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &got); err != nil {
			t.Fatalf("data is not JSON: %v: %q", err, lines[1])
		}
		want := progressEvent{Status: p.Status, OCRDone: ocrDone, OCRTotal: ocrTotal,
			LLMDone: llmDone, LLMTotal: llmTotal, Error: errText}
		if !utf8.ValidString(statusText) || !utf8.ValidString(errText) {
			// Invalid bytes become U+FFFD; the framing above is what matters.
			return
		}
		if got != want {
			t.Fatalf("round trip:\n got  %+v\n want %+v", got, want)
		}
	})
}
