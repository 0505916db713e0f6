package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
)

// This file serves live progress, GET /v1/jobs/{id}/events, as Server-Sent
// Events. The stream polls the database, never process memory: with
// --role=api and --role=worker split, the API process that holds the stream
// is not the one working the job. When the store signals the job's end
// (WatchEnd: every process's, at once on PostgreSQL and within
// about 25 ms on SQLite), the
// stream reads the end at once instead of at its next poll.
//
// Wire format, one event per change of what the client can see:
//
//	event: progress
//	data: {"status":"JOB_STATUS_RUNNING","ocrDone":1,"ocrTotal":3,"llmDone":0,"llmTotal":0}
//
// "error" is added when the job has one. Once the job is terminal, its last
// progress event is followed by "event: done" with the same data and the
// stream ends; a client's EventSource must close on done, or it reconnects
// and is told the same again. A ": keep-alive" comment goes out after
// KeepAlive without an event, so proxies do not cut an idle stream. A stream
// also ends after MaxDuration, when the server shuts down, or after repeated
// database errors; the client reconnects and gets the current state first.

// ProgressSource reads a job's progress for an account; store.Store
// implements it. It answers job.ErrNotFound for an unknown job and for
// another account's. WatchEnd signals a job's end (any process's: at once on
// PostgreSQL, within about 25 ms on SQLite), so that its stream sends the terminal event
// at once instead of at the next poll; an end no signal brings is seen by
// the poll.
type ProgressSource interface {
	JobProgress(ctx context.Context, accountID, id string) (job.Progress, error)
	WatchEnd(jobID string) (ended <-chan struct{}, stop func())
}

// ProgressConfig tunes the live progress streams. Zero values take the
// defaults in the comments.
type ProgressConfig struct {
	// PollInterval is how often an open stream reads the job's progress.
	// Each read is one indexed query. Default 500ms.
	PollInterval time.Duration
	// KeepAlive is the longest silence on a stream before a comment line is
	// sent. Default 15s.
	KeepAlive time.Duration
	// MaxDuration bounds one stream; the client reconnects. Default 1h.
	MaxDuration time.Duration
	// WriteTimeout cuts a stream whose client does not take an event within
	// it, so a stalled reader does not hold a handler forever. Default 10s.
	WriteTimeout time.Duration
	// MaxStreams bounds the streams open at once in this process, and
	// MaxStreamsPerAccount those of one account; above them the answer is
	// 429. Every stream polls the database, so these bound the load that
	// watchers put on it: at the defaults, 2,000 reads/s. Defaults 1000 and 32.
	MaxStreams           int
	MaxStreamsPerAccount int
}

// Defaults of ProgressConfig.
const (
	DefaultProgressPollInterval         = 500 * time.Millisecond
	DefaultProgressKeepAlive            = 15 * time.Second
	DefaultProgressMaxDuration          = time.Hour
	DefaultProgressWriteTimeout         = 10 * time.Second
	DefaultProgressMaxStreams           = 1000
	DefaultProgressMaxStreamsPerAccount = 32
)

func (c ProgressConfig) withDefaults() ProgressConfig {
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultProgressPollInterval
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = DefaultProgressKeepAlive
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = DefaultProgressMaxDuration
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultProgressWriteTimeout
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = DefaultProgressMaxStreams
	}
	if c.MaxStreamsPerAccount <= 0 {
		c.MaxStreamsPerAccount = DefaultProgressMaxStreamsPerAccount
	}
	return c
}

const (
	// maxPollFailures is how many database reads in a row may fail before a
	// stream gives up: a connection blip should not cut every watcher, a
	// lasting outage should not keep them polling.
	maxPollFailures = 3
	// streamsBusyRetry is the Retry-After of a 429 for too many streams.
	streamsBusyRetry = 5 * time.Second
)

// progressEvent is the data of a progress or done event; camelCase like
// the rest of the API.
type progressEvent struct {
	Status   job.Status `json:"status"`
	OCRDone  int        `json:"ocrDone"`
	OCRTotal int        `json:"ocrTotal"`
	LLMDone  int        `json:"llmDone"`
	LLMTotal int        `json:"llmTotal"`
	Error    string     `json:"error,omitempty"`
}

// encodeEvent frames one SSE event. The data is JSON, which escapes every
// line break, so text from a job (its error) can never end the data line
// early or forge another event.
func encodeEvent(name string, p job.Progress) []byte {
	data, err := json.Marshal(progressEvent{
		Status: p.Status, OCRDone: p.OCRDone, OCRTotal: p.OCRTotal,
		LLMDone: p.LLMDone, LLMTotal: p.LLMTotal, Error: p.Error,
	})
	if err != nil {
		// Strings and ints always marshal (invalid UTF-8 is replaced).
		panic("encode progress event: " + err.Error())
	}
	var b bytes.Buffer
	b.Grow(len(name) + len(data) + 16)
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

var keepAliveComment = []byte(": keep-alive\n\n")

// eventStreams serves GET /v1/jobs/{id}/events and counts the open streams.
type eventStreams struct {
	s   *Server
	cfg ProgressConfig

	mu         sync.Mutex
	open       int
	perAccount map[string]int
	// shutdown holds, per http.Server that serves streams, a channel closed
	// when it starts shutting down: open streams end at once instead of
	// holding Shutdown for its whole timeout.
	shutdown map[*http.Server]chan struct{}
}

// progressEvents returns the handler of the live progress route. It expects
// the account in the request context (authenticate). Without
// Deps.Progress it answers 501 Unimplemented.
func (s *Server) progressEvents() http.Handler {
	return &eventStreams{
		s:          s,
		cfg:        s.cfg.Progress,
		perAccount: map[string]int{},
		shutdown:   map[*http.Server]chan struct{}{},
	}
}

func (e *eventStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	src := e.s.deps.Progress
	if src == nil {
		e.s.writeError(w, r, status.Error(codes.Unimplemented, "live progress is not available on this server"))
		return
	}
	account, ok := auth.Account(r.Context())
	if !ok {
		// The store reads "" as any account: never let it through.
		e.s.writeError(w, r, errUnauthenticated)
		return
	}
	id := r.PathValue("id")
	if !api.PossibleID(id) {
		// No such job can exist; the store is not asked (api.PossibleID).
		e.s.writeError(w, r, errJobNotFound)
		return
	}
	// Watch before the first read, so an end between the two is not missed.
	ended, stopWatch := src.WatchEnd(id)
	defer stopWatch()
	p, err := src.JobProgress(r.Context(), account, id)
	if errors.Is(err, job.ErrNotFound) {
		err = errJobNotFound // the other job routes' words, not the store's
	}
	if err != nil {
		e.s.writeError(w, r, err)
		return
	}
	if !e.acquire(account) {
		st, _ := status.New(codes.ResourceExhausted, "too many open progress streams").WithDetails(
			&errdetails.RetryInfo{RetryDelay: durationpb.New(streamsBusyRetry)})
		e.s.writeError(w, r, st.Err())
		return
	}
	defer e.release(account)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), e.cfg.MaxDuration)
	defer cancel()
	out := &eventWriter{w: w, rc: http.NewResponseController(w), timeout: e.cfg.WriteTimeout}
	defer out.end()
	if err := e.stream(ctx, out, src, account, id, p, ended, e.shuttingDown(r)); err != nil {
		// The status is sent: the stream just ends, and the client reconnects.
		e.s.log.LogAttrs(r.Context(), slog.LevelWarn, "progress stream ended early",
			append(requestAttrs(r.Context()), slog.String("job_id", id), slog.String("error", err.Error()))...)
	}
}

// stream sends p and then every change of it until the job is terminal or
// ctx ends, reading the job every poll interval and at once when ended is
// closed. It returns an error only for a failure worth logging: a client
// that left or stopped reading is not one.
func (e *eventStreams) stream(ctx context.Context, out *eventWriter, src ProgressSource,
	account, id string, p job.Progress, ended <-chan struct{}, shutdown <-chan struct{},
) error {
	last := encodeEvent("progress", p)
	if out.write(last) != nil {
		return nil
	}
	if p.Status.Terminal() {
		_ = out.write(encodeEvent("done", p))
		return nil
	}
	poll := time.NewTicker(e.cfg.PollInterval)
	defer poll.Stop()
	keepAlive := time.NewTimer(e.cfg.KeepAlive)
	defer keepAlive.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil // client gone or MaxDuration reached
		case <-shutdown:
			return nil
		case <-keepAlive.C:
			if out.write(keepAliveComment) != nil {
				return nil
			}
			keepAlive.Reset(e.cfg.KeepAlive)
			continue
		case <-ended:
			ended = nil // closed once; the poll goes on should this read fail
		case <-poll.C:
		}
		p, err := src.JobProgress(ctx, account, id)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, job.ErrNotFound):
			return nil // deleted while watched; a reconnect answers 404
		case err != nil:
			if failures++; failures >= maxPollFailures {
				return err
			}
			continue
		}
		failures = 0
		if ev := encodeEvent("progress", p); !bytes.Equal(ev, last) {
			if out.write(ev) != nil {
				return nil
			}
			last = ev
			keepAlive.Reset(e.cfg.KeepAlive)
		}
		if p.Status.Terminal() {
			_ = out.write(encodeEvent("done", p))
			return nil
		}
	}
}

func (e *eventStreams) acquire(account string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.open >= e.cfg.MaxStreams || e.perAccount[account] >= e.cfg.MaxStreamsPerAccount {
		return false
	}
	e.open++
	e.perAccount[account]++
	return true
}

func (e *eventStreams) release(account string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.open--
	if e.perAccount[account]--; e.perAccount[account] <= 0 {
		delete(e.perAccount, account)
	}
}

// shuttingDown returns a channel closed when the http.Server serving r
// begins to shut down; nil (never ready) when r carries no server.
func (e *eventStreams) shuttingDown(r *http.Request) <-chan struct{} {
	hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	if !ok {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.shutdown[hs]
	if !ok {
		ch = make(chan struct{})
		e.shutdown[hs] = ch
		hs.RegisterOnShutdown(func() { close(ch) })
	}
	return ch
}

// eventWriter writes whole events and flushes each, under a write deadline
// that lasts only while the event is written: on HTTP/2 a stream's write
// deadline fires whether or not a write is under way, and one left set reset
// every quiet stream WriteTimeout after its last event (before the
// keep-alive, which comes later).
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *eventWriter) write(b []byte) error {
	// ErrNotSupported leaves the stream without a deadline; the other bounds
	// (MaxDuration, client disconnect) still end it.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	if err := w.rc.Flush(); err != nil {
		return err
	}
	_ = w.rc.SetWriteDeadline(time.Time{})
	return nil
}

// end bounds what net/http writes once the handler returns (HTTP/1's
// chunked terminator), which a deadline left from an event long past would
// fail, breaking a stream that ended cleanly.
func (w *eventWriter) end() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
}
