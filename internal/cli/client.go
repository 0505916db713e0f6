package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docjobs/docjobs/internal/provider"
)

// This file is the client side of the submit, jobs and get commands: it
// talks to a docjobs service over its REST API only (spec/interface.md), as
// any other caller would, so the commands work against any deployment.

// defaultServerURL is where the client looks for the service without
// --server or DOCJOBS_URL: `docjobs serve` with its defaults.
const defaultServerURL = "http://localhost:8080"

// clientConfig is what every client command needs: where the service is
// and the key that opens it.
type clientConfig struct {
	server string // base URL, no trailing slash
	apiKey string
}

// clientFlags are the flags the client commands share; a flag that is set
// wins over its environment variable.
type clientFlags struct {
	server, apiKey string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "service base URL (DOCJOBS_URL; default "+defaultServerURL+")")
	cmd.Flags().StringVar(&f.apiKey, "api-key", "",
		"API key; prefer DOCJOBS_API_KEY or DOCJOBS_API_KEY_FILE, a flag stays in shell history and the process list")
}

// shownURL is a refused server URL as an error may show it: what could be
// a password (up to the last @) or a token (a query or fragment) is
// replaced, since a URL that does not parse cannot be trusted to say which
// part is which.
func shownURL(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw, "@"); at > i {
			raw = raw[:i+3] + "…@" + raw[at+1:]
		}
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i+1] + "…"
	}
	return raw
}

// clientConfig resolves the flags and the environment into a clientConfig.
// Its errors are usage errors: nothing was sent yet.
func (e *environment) clientConfig(f clientFlags) (clientConfig, error) {
	server := strings.TrimRight(or(f.server, or(e.getenv("DOCJOBS_URL"), defaultServerURL)), "/")
	u, err := url.Parse(server)
	switch {
	case err == nil && u.User != nil:
		// Not echoed: it holds a password. The API key is the credential;
		// the Bearer header would replace basic auth anyway.
		return clientConfig{}, fmt.Errorf("%w: --server / DOCJOBS_URL: no user or password in the URL (the API key is the credential)", errUsage)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return clientConfig{}, fmt.Errorf("%w: --server / DOCJOBS_URL: want an http(s) URL like %s, got %q", errUsage, defaultServerURL, shownURL(server))
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(server, "?"):
		// Paths are appended to it: a query would end up in the middle.
		return clientConfig{}, fmt.Errorf("%w: --server / DOCJOBS_URL: want the service's base URL, without a query or fragment, got %q", errUsage, shownURL(server))
	}
	key := f.apiKey
	if key == "" {
		if key, err = e.secret("DOCJOBS_API_KEY"); err != nil {
			return clientConfig{}, err
		}
	}
	if key == "" {
		return clientConfig{}, fmt.Errorf("%w: an API key is required: set DOCJOBS_API_KEY or DOCJOBS_API_KEY_FILE (or --api-key)", errUsage)
	}
	if i := strings.IndexFunc(key, isControl); i >= 0 {
		// A header cannot carry it; Go would report it as an unreachable
		// service. Most often a line break of $(cat file).
		return clientConfig{}, fmt.Errorf("%w: the API key holds a control character (a line break?) at byte %d", errUsage, i)
	}
	return clientConfig{server: server, apiKey: key}, nil
}

// secret reads the environment variable name, or the file NAME_FILE names,
// so that a key can come from a mounted secret rather than the environment
// (DESIGN §7, after miniflux). The file's surrounding white space, a final
// newline most often, is not part of the key. Both set is ambiguous and
// refused.
func (e *environment) secret(name string) (string, error) {
	v, file := e.getenv(name), e.getenv(name+"_FILE")
	switch {
	case file == "":
		return v, nil
	case v != "":
		return "", fmt.Errorf("%w: set %s or %s_FILE, not both", errUsage, name, name)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%w: %s_FILE: %w", errUsage, name, err)
	}
	return strings.TrimSpace(string(raw)), nil
}

func isControl(r rune) bool { return r < ' ' || r == 0x7f }

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// client calls one docjobs service with one key.
type client struct {
	cfg  clientConfig
	http *http.Client
	// notes, when set, is where the client says that it waits before
	// asking again, so that a pause of a 429 does not look like a hang.
	notes io.Writer
	// secrets are what the client sends that must never be shown: the API
	// key, and the provider keys of a create (see hide). Text an answer
	// carries passes through shown before it reaches a message.
	sent    []string
	secrets provider.Secrets
}

// hide adds secrets, sent in request bodies, to those shown removes.
func (c *client) hide(secrets ...string) {
	c.sent = append(c.sent, secrets...)
	c.secrets = provider.NewSecrets(c.sent...)
}

// shown is text taken from an answer, fit for a message or the output:
// without any secret the client sent, in any spelling. What answers is
// not always the service: a --server pointing at another host, or a proxy
// or gateway in front of it, may answer with an error page or a 200 that
// echoes the request, its headers and body included.
func (c *client) shown(text string) string {
	return c.secrets.Redact(text)
}

func newClient(cfg clientConfig) *client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A service that takes a request and never answers should not hang the
	// command; the clock starts once the request (an upload's file
	// included) is sent. No overall timeout: an event stream is long.
	t.ResponseHeaderTimeout = time.Minute
	// A redirect of a POST or DELETE would be followed as a GET (Go does
	// so for 301 to 303): an upload would answer 405, a create the job
	// list. send turns the redirect into an error that names the address.
	redirect := func(req *http.Request, via []*http.Request) error {
		if via[0].Method != http.MethodGet {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	c := &client{cfg: cfg, http: &http.Client{Transport: t, CheckRedirect: redirect}}
	c.hide(cfg.apiKey)
	return c
}

// note writes one line to notes, when there is one. It may quote the
// service's text: shownLines keeps that from driving the terminal.
func (c *client) note(format string, args ...any) {
	if c.notes != nil {
		fmt.Fprintf(c.notes, "docjobs: %s\n", shownLines(fmt.Sprintf(format, args...)))
	}
}

// apiError is an error answer of the service: its {code, message} body and
// the HTTP status.
type apiError struct {
	status  int
	message string
	retry   time.Duration // Retry-After, when the answer had one
}

func (e *apiError) Error() string {
	if e.retry > 0 && !strings.Contains(e.message, "retry") {
		return fmt.Sprintf("%s (HTTP %d, retry after %s)", e.message, e.status, e.retry)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.message, e.status)
}

// comeBackLater reports an answer that asks for the same request later: a
// 429 (the account's request rate, DOCJOBS_ACCOUNT_RATE, its active jobs,
// too many open streams) or a 503 that says when, with Retry-After. A 429
// without one is final: docjobs sends it for an upload past the account's
// quota, which no wait frees, and sending the whole file again seven
// times would only cost the upload seven times.
func (e *apiError) comeBackLater() bool {
	return (e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable) && e.retry > 0
}

// How a request answered "come back later" is sent again: after the
// answer's Retry-After, at most retryTries
// attempts and retryBudget of waiting for one request. That lets a submit
// of hundreds of files through the account's rate limit one refill at a
// time, and ends against a service that stays busy. Variables, so that
// tests can shorten them.
var (
	retryTries  = 8
	retryBudget = time.Minute
)

// bodyFunc makes a request's body, anew for each attempt; nil: no body.
type bodyFunc func() (io.Reader, error)

// do sends a request to path (with its query) and returns the response of
// a 2xx. Any other status becomes an *apiError, with the body's message
// when it has one; a failure to reach the service names the URL. An
// answer that asks to come back later is waited out and sent again,
// within retryTries and retryBudget.
func (c *client) do(ctx context.Context, method, path string, body bodyFunc, contentType string, contentLength int64) (*http.Response, error) {
	var waited time.Duration
	for try := 1; ; try++ {
		resp, err := c.send(ctx, method, path, body, contentType, contentLength)
		var ae *apiError
		if err == nil || !errors.As(err, &ae) || !ae.comeBackLater() || try >= retryTries {
			return resp, err
		}
		// A wait past the budget is not shortened: asked again early, the
		// service would refuse again.
		wait := ae.retry
		if waited+wait > retryBudget {
			return nil, err
		}
		c.note("%s %s: %s (HTTP %d); asking again in %s", method, strings.SplitN(path, "?", 2)[0], ae.message, ae.status, wait)
		if serr := sleep(ctx, wait); serr != nil {
			// Stopped while waiting: the last answer was a refusal, which
			// the caller may need (a create refused made no job).
			return nil, fmt.Errorf("%w, waiting after: %w", serr, err)
		}
		waited += wait
	}
}

// createJob sends POST /v1/jobs with req and decodes the created job into
// out. While the service cannot be reached, or a proxy in front says it is
// away (502, 504, a 503 without Retry-After), the create is sent again,
// with follow's waits, for up to followGiveUp: a service that restarts
// closes its port for as long as it drains. Sending again is safe because
// req carries an idempotency key (submit always sets one): a create whose
// answer was lost returns the job it made rather than making a second.
// maybeMade reports whether some attempt may have reached the service, so
// that a job may exist although err says otherwise; a connection refused
// sent nothing.
func (c *client) createJob(ctx context.Context, req createRequest, out *json.RawMessage) (maybeMade bool, err error) {
	failing := failures{}
	for {
		err := c.sendJSON(ctx, http.MethodPost, "/v1/jobs", req, out, maxObjectBytes)
		if err == nil {
			return true, nil
		}
		maybeMade = maybeMade || !neverSent(err)
		if ctx.Err() != nil || !serviceAway(err) || req.IdempotencyKey == "" {
			return maybeMade, err
		}
		wait, give := failing.next()
		if give {
			return maybeMade, err
		}
		c.note("%v; sending the create again in %s (under the same idempotency key: one job at most)", err, wait)
		if serr := sleep(ctx, wait); serr != nil {
			return maybeMade, fmt.Errorf("%w, waiting after: %w", serr, err)
		}
	}
}

// neverSent reports an error of a request that never left: the connection
// to the service could not be made (refused, no route), so the service saw
// nothing.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// unanswered is the error of a request that got no answer: the service
// could not be reached, or the connection failed or timed out before an
// answer came.
type unanswered struct{ err error }

func (u *unanswered) Error() string { return u.err.Error() }
func (u *unanswered) Unwrap() error { return u.err }

// serviceAway reports an error that a service restarting, or a network
// blip, gives: no answer (no connection, a connection cut, no answer in
// time), or a proxy's 502, 504 or 503 without a Retry-After (a 503 with
// one was waited out by do already). A name that does not resolve or a
// certificate that is not trusted will not mend in two minutes: those are
// reported at once.
func serviceAway(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status == http.StatusBadGateway || ae.status == http.StatusGatewayTimeout ||
			ae.status == http.StatusServiceUnavailable && ae.retry == 0
	}
	var dns *net.DNSError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certificate *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns), errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &certificate):
		return false
	}
	var u *unanswered
	return errors.As(err, &u)
}

// send makes one attempt of a request.
func (c *client) send(ctx context.Context, method, path string, body bodyFunc, contentType string, contentLength int64) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		var err error
		if r, err = body(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.server+path, r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.apiKey)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if r != nil && contentLength >= 0 {
		req.ContentLength = contentLength
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// *url.Error says "Post \"http://…\": …" already; naming the setting
		// tells the user what to change.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &unanswered{fmt.Errorf("cannot reach the service at %s (--server, DOCJOBS_URL): %s %s: %w", c.cfg.server, method, path, err)}
	}
	if resp.StatusCode/100 == 3 {
		resp.Body.Close()
		return nil, &apiError{status: resp.StatusCode, message: fmt.Sprintf(
			"the service at %s redirects %s %s to %s: set --server or DOCJOBS_URL to the address it redirects to",
			c.cfg.server, method, path, shownText(c.shown(resp.Header.Get("Location"))))}
	}
	// Any 2xx: the contract does not fix the codes, and a gateway may
	// answer 201 to a create or 204 to a delete.
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, c.readAPIError(resp)
	}
	return resp, nil
}

// sleep waits d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// readAPIError turns an error answer into an *apiError. A body that is not
// the service's (a proxy's HTML page) is shown in part, as it came but for
// the secrets the client sent (shown) and what shownText escapes.
func (c *client) readAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct {
		Message string `json:"message"`
	}
	msg := ""
	// Either is the service's text, or a proxy's, printed on a terminal:
	// shownText keeps ESC and its like from being obeyed there.
	if json.Unmarshal(raw, &body) == nil && body.Message != "" {
		msg = shownText(body.Message)
	} else if text := strings.TrimSpace(string(raw)); text != "" {
		msg = http.StatusText(resp.StatusCode) + ": " + shownText(text)
	} else {
		msg = http.StatusText(resp.StatusCode)
	}
	return &apiError{status: resp.StatusCode, message: c.shown(msg), retry: parseRetryAfter(resp.Header.Get("Retry-After"))}
}

// getJSON GETs path and decodes its JSON answer, at most limit bytes,
// into out.
func (c *client) getJSON(ctx context.Context, path string, out any, limit int64) error {
	return c.sendJSON(ctx, http.MethodGet, path, nil, out, limit)
}

// sendJSON sends in (nil: no body) as JSON and decodes the answer, at most
// limit bytes, into out.
func (c *client) sendJSON(ctx context.Context, method, path string, in, out any, limit int64) error {
	var body bodyFunc
	contentType := ""
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = func() (io.Reader, error) { return bytes.NewReader(raw), nil }
		contentType = "application/json"
	}
	return c.receive(ctx, method, path, body, contentType, -1, limit, func(answer io.Reader) error {
		if err := json.NewDecoder(answer).Decode(out); err != nil {
			return fmt.Errorf("%s %s: read answer: %w", method, path, err)
		}
		return nil
	})
}

// Bounds of an answer once its headers came. answerIdle: a service that
// stops sending an answer midway (hung, or a proxy that holds the
// connection) fails the command, as one that sends no headers does
// (ResponseHeaderTimeout); the event stream has its own (streamIdle).
// maxObjectBytes and maxPageBytes: a JSON answer is held whole to be
// decoded, so that a faulty or hostile service must not make the client
// hold gigabytes (a 2 GiB job grew `docjobs get` past 12 GB before). The
// largest job the service makes (16 prompts of 64 KiB, a 128 KiB schema,
// 200 URLs of 2 KiB) is about 2 MiB as JSON, a page of 100 of them about
// 200 MiB (more only for prompts made mostly of escaped characters).
// Variables, so that tests can shorten them.
var (
	answerIdle           = time.Minute
	maxObjectBytes int64 = 32 << 20
	maxPageBytes   int64 = 256 << 20
)

var (
	errAnswerIdle     = errors.New("the service sent nothing more of its answer for a minute")
	errAnswerTooLarge = errors.New("the answer is larger than any the service sends")
)

// receive sends a request as do does and hands its answer's body to read.
// The body fails past limit bytes (-1: no bound, for a result, which is
// streamed), and when the service sends nothing of it for answerIdle.
func (c *client) receive(ctx context.Context, method, path string, body bodyFunc, contentType string, contentLength, limit int64, read func(io.Reader) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := c.do(ctx, method, path, body, contentType, contentLength)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	idle := time.AfterFunc(answerIdle, func() { cancel(errAnswerIdle) })
	defer idle.Stop()
	return read(&answerBody{ctx: ctx, r: resp.Body, idle: idle, limit: limit})
}

// answerBody is an answer's body as receive bounds it.
type answerBody struct {
	ctx   context.Context
	r     io.Reader
	idle  *time.Timer
	read  int64
	limit int64 // -1: none
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.limit >= 0 && int64(len(p)) > b.limit-b.read+1 {
		p = p[:b.limit-b.read+1] // one byte past the limit tells it was passed
	}
	n, err := b.r.Read(p)
	if n > 0 {
		b.idle.Reset(answerIdle)
	}
	b.read += int64(n)
	switch {
	case b.limit >= 0 && b.read > b.limit:
		return 0, fmt.Errorf("%w (over %d MiB): a faulty service, or not docjobs", errAnswerTooLarge, b.limit>>20)
	case err != nil && context.Cause(b.ctx) == errAnswerIdle:
		return n, errAnswerIdle
	}
	return n, err
}

// copyTo GETs path and copies its body to w as it arrives, so a large
// result is never held whole. A body cut short (the service aborts a
// result it cannot finish) is an error, never a quiet truncation.
func (c *client) copyTo(ctx context.Context, path string, w io.Writer) error {
	return c.receive(ctx, http.MethodGet, path, nil, "", -1, -1, func(answer io.Reader) error {
		ends := &lastByte{w: w}
		if _, err := io.Copy(ends, answer); err != nil {
			if ends.err != nil {
				return fmt.Errorf("GET %s: write the answer: %w", path, ends.err)
			}
			return fmt.Errorf("GET %s: read answer: %w", path, err)
		}
		if ends.last != '\n' {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return fmt.Errorf("GET %s: write the answer: %w", path, err)
			}
		}
		return nil
	})
}

// lastByte remembers the last byte written through it, and a write error,
// so that one is not reported as a read error.
type lastByte struct {
	w    io.Writer
	last byte
	err  error
}

func (l *lastByte) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	n, err := l.w.Write(p)
	if err != nil {
		l.err = err
	}
	return n, err
}

// uploadResult is the upload endpoint's answer (snake_case, per the spec).
type uploadResult struct {
	URL       string `json:"url"`
	Name      string `json:"name"`
	SizeBytes int64  `json:"size_bytes"`
}

// upload sends the file at path to POST /v1/jobs/upload. The file is
// streamed from disk between the multipart head and tail, which are built
// first so that the body's length is known: the request carries a
// Content-Length, as proxies in front of the service may require, and the
// file is never read into memory.
func (c *client) upload(ctx context.Context, path string) (uploadResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return uploadResult{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return uploadResult{}, err
	}
	if !info.Mode().IsRegular() {
		return uploadResult{}, fmt.Errorf("%s: not a regular file", path)
	}
	var frame bytes.Buffer
	mw := multipart.NewWriter(&frame)
	if _, err := mw.CreateFormFile("file", filepath.Base(path)); err != nil {
		return uploadResult{}, err
	}
	head := bytes.Clone(frame.Bytes())
	frame.Reset()
	if err := mw.Close(); err != nil {
		return uploadResult{}, err
	}
	tail := frame.Bytes()
	// A section of the size announced: a file that grows while it is sent
	// is cut there; one that shrinks fails the request, as it should. Each
	// attempt reads its own section (ReadAt), so an attempt the transport
	// is still closing never shares a file offset with the next.
	body := func() (io.Reader, error) {
		return io.MultiReader(bytes.NewReader(head), io.NewSectionReader(f, 0, info.Size()), bytes.NewReader(tail)), nil
	}
	var out uploadResult
	var decodeErr error
	err = c.receive(ctx, http.MethodPost, "/v1/jobs/upload", body, mw.FormDataContentType(),
		int64(len(head))+info.Size()+int64(len(tail)), maxObjectBytes, func(answer io.Reader) error {
			decodeErr = json.NewDecoder(answer).Decode(&out)
			return decodeErr
		})
	switch {
	case decodeErr != nil:
		return uploadResult{}, fmt.Errorf("upload %s: read answer: %w", path, err)
	case err != nil:
		return uploadResult{}, fmt.Errorf("upload %s: %w", path, err)
	}
	return out, nil
}

// progress is the data of a progress or done event of a job's event
// stream (internal/server/events.go).
type progress struct {
	Status   string `json:"status"`
	OCRDone  int    `json:"ocrDone"`
	OCRTotal int    `json:"ocrTotal"`
	LLMDone  int    `json:"llmDone"`
	LLMTotal int    `json:"llmTotal"`
	Error    string `json:"error"`
	// polled: read from GET /v1/jobs/{id}, which has no row counts.
	polled bool
}

// Waits of follow. A service that restarts drains its work for up to 30 s by default
// with its port closed, and a proxy in front answers 502 to 504 meanwhile:
// follow asks again after followBackoff, doubled after each failure up to
// followMaxBackoff, and gives up once it has failed for followGiveUp in a
// row. pollMaxInterval bounds the wait between reads of a job whose
// service has no event stream. Variables, so that tests can shorten them.
var (
	followBackoff    = time.Second
	followMaxBackoff = 30 * time.Second
	followGiveUp     = 2 * time.Minute
	pollMaxInterval  = 10 * time.Second
	// streamIdle ends a stream that sent nothing, not even the keep-alive
	// comment the server sends every 15 s: a hung service, or a proxy that
	// dropped the connection without a word. follow opens it again.
	streamIdle = time.Minute
)

// follow reads the job's event stream, GET /v1/jobs/{id}/events, calling
// onProgress for every event, until the done event, whose progress it
// returns. A stream the server ends without done (it does after an hour,
// and on shutdown) is opened again, and its first event is the current
// state; so is one that could not be reached or was cut, with a growing
// wait, for up to followGiveUp. The stream is docjobs' own, not the
// contract's (spec/interface.md): against a service without it (404, 405,
// 501), one that keeps no more streams for the account (429), or a stream
// without an event it can read, follow polls GET /v1/jobs/{id} instead.
func (c *client) follow(ctx context.Context, id string, onProgress func(progress)) (progress, error) {
	path := "/v1/jobs/" + url.PathEscape(id) + "/events"
	failing := failures{}
	for {
		p, done, heard, err := c.readEvents(ctx, path, onProgress)
		if done && p.Status == "" {
			return c.poll(ctx, id, onProgress) // a done event that does not say how
		}
		if done {
			return p, nil
		}
		if heard {
			failing.reset() // a stream that told something is not a failure in a row
		}
		wait := followBackoff / 5
		var ae *apiError
		switch {
		case ctx.Err() != nil:
			return progress{}, ctx.Err()
		case errors.As(err, &ae) && noEventStream(ae.status):
			c.note("the service has no progress stream (%v): reading GET /v1/jobs/%s instead", err, id)
			return c.poll(ctx, id, onProgress)
		case ae != nil && ae.status == http.StatusTooManyRequests:
			// Too many streams open for the account: the job's status
			// reads the same without one.
			c.note("the service keeps no more progress streams for now (%v): reading GET /v1/jobs/%s instead", err, id)
			return c.poll(ctx, id, onProgress)
		case errors.Is(err, errBadEvent) || err == nil && !heard:
			// docjobs' stream opens with the job's state: one that ends
			// without an event it can read is not docjobs' (a proxy's
			// page, an empty answer), and reopening it would go on for
			// ever.
			c.note("the progress stream sent nothing readable: reading GET /v1/jobs/%s instead", id)
			return c.poll(ctx, id, onProgress)
		case ae != nil && ae.status < 500:
			return progress{}, err // 401, 403: asking again will not help
		case err != nil: // unreachable, cut, or a proxy's 5xx: a restart, a network blip
			var give bool
			if wait, give = failing.next(); give {
				return progress{}, err
			}
		default:
			// The server ended the stream (an hour passed, or it shut
			// down): open it again, a little later, lest a proxy that cuts
			// every stream at once make this a busy loop.
		}
		if err := sleep(ctx, wait); err != nil {
			return progress{}, err
		}
	}
}

// noEventStream reports an answer of a service that does not serve the
// progress stream: a 404 (which may also mean that the job is gone: poll
// tells the two apart), a 405 or a 501.
func noEventStream(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// failures counts attempts that failed in a row, for the waits between
// them.
type failures struct {
	since time.Time
	wait  time.Duration
}

func (f *failures) reset() { *f = failures{} }

// next counts one more failure and returns the wait before the next
// attempt, or give when failures have lasted followGiveUp.
func (f *failures) next() (wait time.Duration, give bool) {
	if f.since.IsZero() {
		f.since, f.wait = time.Now(), followBackoff
	} else {
		f.wait = min(2*f.wait, followMaxBackoff)
	}
	if time.Since(f.since)+f.wait > followGiveUp {
		return 0, true
	}
	return f.wait, false
}

// poll reads GET /v1/jobs/{id}, the contract's job status, calling
// onProgress on each read, until the job is COMPLETE, FAILED or
// CANCELLED. The wait between reads grows from followBackoff to
// pollMaxInterval; failures are waited out as follow's are.
func (c *client) poll(ctx context.Context, id string, onProgress func(progress)) (progress, error) {
	path := "/v1/jobs/" + url.PathEscape(id)
	interval := followBackoff
	failing := failures{}
	for {
		var j jobState
		err := c.getJSON(ctx, path, &j, maxObjectBytes)
		wait := interval
		var ae *apiError
		switch {
		case err == nil:
			failing.reset()
			p := j.progress()
			if p.Status == "" {
				return progress{}, fmt.Errorf("GET %s: the answer carries no job status", path)
			}
			if terminalStatus(p.Status) {
				return p, nil
			}
			onProgress(p)
			interval = min(2*interval, pollMaxInterval)
		case ctx.Err() != nil:
			return progress{}, ctx.Err()
		case errors.As(err, &ae) && ae.status < 500 && ae.status != http.StatusTooManyRequests:
			return progress{}, err // 401, 404: the job cannot be read
		default:
			var give bool
			if wait, give = failing.next(); give {
				return progress{}, err
			}
		}
		if err := sleep(ctx, wait); err != nil {
			return progress{}, err
		}
	}
}

// jobState is the part of GET /v1/jobs/{id} that poll reads. The contract
// does not fix the answer's envelope: docjobs answers the job itself,
// another service may wrap it as {"job": …}.
type jobState struct {
	Status string
	Error  string
	Job    *struct{ Status, Error string }
}

func (j jobState) progress() progress {
	if j.Status == "" && j.Job != nil {
		return progress{Status: j.Job.Status, Error: j.Job.Error, polled: true}
	}
	return progress{Status: j.Status, Error: j.Error, polled: true}
}

// terminalStatus reports a job status that does not change any more.
func terminalStatus(s string) bool {
	switch s {
	case "JOB_STATUS_COMPLETE", "JOB_STATUS_FAILED", "JOB_STATUS_CANCELLED":
		return true
	}
	return false
}

// readEvents reads one connection of the event stream. done reports the
// done event, with its progress; connected, that the stream was open.
// Events are parsed as Server-Sent Events are (a data field may span
// lines, an event ends at a blank line); events other than progress and
// done are skipped.
func (c *client) readEvents(ctx context.Context, path string, onProgress func(progress)) (p progress, done, heard bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := c.do(ctx, http.MethodGet, path, nil, "", -1)
	if err != nil {
		return progress{}, false, false, err
	}
	defer resp.Body.Close()
	idle := time.AfterFunc(streamIdle, func() { cancel(errStreamIdle) })
	defer idle.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	event, data := "", []string(nil)
	for sc.Scan() {
		idle.Reset(streamIdle)
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = append(data, value)
			} // "" is a comment (": keep-alive"); other fields are not ours
			continue
		}
		if len(data) > 0 && (event == "progress" || event == "done" || event == "") {
			var ev progress
			if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &ev); err != nil {
				return progress{}, false, heard, fmt.Errorf("GET %s: %s event: %w: %w", path, event, errBadEvent, err)
			}
			if event == "done" {
				return ev, true, true, nil
			}
			heard = true
			onProgress(ev)
		}
		event, data = "", nil
	}
	if context.Cause(ctx) == errStreamIdle {
		return progress{}, false, heard, fmt.Errorf("GET %s: %w", path, errStreamIdle)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		// Not docjobs' (its events are small), and the same line would
		// come again on every reconnection: poll the job instead.
		return progress{}, false, heard, fmt.Errorf("GET %s: a line over %d MiB: %w", path, maxEventLine>>20, errBadEvent)
	}
	return progress{}, false, heard, sc.Err()
}

// maxEventLine is the longest line of the event stream read: a job's
// error can be long, but not a MiB.
const maxEventLine = 1 << 20

var (
	errStreamIdle = errors.New("the progress stream sent nothing, not even a keep-alive, for a minute")
	errBadEvent   = errors.New("not a progress event")
)

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date
// (RFC 9110 §10.2.3), which a proxy may send. A wait past maxRetryAfter
// is maxRetryAfter: no command waits so long, and more seconds than a
// Duration holds would wrap to any value, a short wait among them.
func parseRetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if s, err := strconv.ParseInt(h, 10, 64); (err == nil || errors.Is(err, strconv.ErrRange)) && s > 0 {
		return time.Duration(min(s, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && time.Until(t) > 0 {
		return min(time.Until(t).Round(time.Second), maxRetryAfter)
	}
	return 0
}

// maxRetryAfter is the longest Retry-After read.
const maxRetryAfter = 24 * time.Hour
