package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
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

// clientConfig resolves the flags and the environment into a clientConfig.
// Its errors are usage errors: nothing was sent yet.
func (e *environment) clientConfig(f clientFlags) (clientConfig, error) {
	server := strings.TrimRight(or(f.server, or(e.getenv("DOCJOBS_URL"), defaultServerURL)), "/")
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return clientConfig{}, fmt.Errorf("%w: --server / DOCJOBS_URL: want an http(s) URL like %s, got %q", errUsage, defaultServerURL, server)
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
}

func newClient(cfg clientConfig) *client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A service that takes a request and never answers should not hang the
	// command; the clock starts once the request (an upload's file
	// included) is sent. No overall timeout: an event stream is long.
	t.ResponseHeaderTimeout = time.Minute
	return &client{cfg: cfg, http: &http.Client{Transport: t}}
}

// apiError is an error answer of the service: its {code, message} body and
// the HTTP status.
type apiError struct {
	status  int
	message string
	retry   time.Duration // Retry-After, when the answer had one
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.message, e.status) }

// do sends a request to path (with its query) and returns the response of
// a 200. Any other status becomes an *apiError, with the body's message
// when it has one; a failure to reach the service names the URL.
func (c *client) do(ctx context.Context, method, path string, body io.Reader, contentType string, contentLength int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.server+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.apiKey)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if body != nil && contentLength >= 0 {
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
		return nil, fmt.Errorf("cannot reach the service at %s (--server, DOCJOBS_URL): %s %s: %w", c.cfg.server, method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

// readAPIError turns an error answer into an *apiError. A body that is not
// the service's (a proxy's HTML page) is shown in part, as it came.
func readAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct {
		Message string `json:"message"`
	}
	msg := ""
	if json.Unmarshal(raw, &body) == nil && body.Message != "" {
		msg = body.Message
	} else if text := strings.TrimSpace(string(raw)); text != "" {
		msg = http.StatusText(resp.StatusCode) + ": " + text
	} else {
		msg = http.StatusText(resp.StatusCode)
	}
	return &apiError{status: resp.StatusCode, message: msg, retry: parseRetryAfter(resp.Header.Get("Retry-After"))}
}

// getJSON GETs path and decodes its JSON answer into out.
func (c *client) getJSON(ctx context.Context, path string, out any) error {
	return c.sendJSON(ctx, http.MethodGet, path, nil, out)
}

// sendJSON sends in (nil: no body) as JSON and decodes the answer into out.
func (c *client) sendJSON(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	contentType := ""
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body, contentType = bytes.NewReader(raw), "application/json"
	}
	resp, err := c.do(ctx, method, path, body, contentType, -1)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return nil
}

// copyTo GETs path and copies its body to w as it arrives, so a large
// result is never held whole. A body cut short (the service aborts a
// result it cannot finish) is an error, never a quiet truncation.
func (c *client) copyTo(ctx context.Context, path string, w io.Writer) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil, "", -1)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ends := &lastByte{w: w}
	if _, err := io.Copy(ends, resp.Body); err != nil {
		return fmt.Errorf("GET %s: read answer: %w", path, err)
	}
	if ends.last != '\n' {
		_, _ = io.WriteString(w, "\n")
	}
	return nil
}

// lastByte remembers the last byte written through it.
type lastByte struct {
	w    io.Writer
	last byte
}

func (l *lastByte) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	return l.w.Write(p)
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
	// LimitReader: a file that grows while it is sent is cut at the size
	// announced; one that shrinks fails the request, as it should.
	body := io.MultiReader(bytes.NewReader(head), io.LimitReader(f, info.Size()), bytes.NewReader(tail))
	resp, err := c.do(ctx, http.MethodPost, "/v1/jobs/upload", body, mw.FormDataContentType(),
		int64(len(head))+info.Size()+int64(len(tail)))
	if err != nil {
		return uploadResult{}, fmt.Errorf("upload %s: %w", path, err)
	}
	defer resp.Body.Close()
	var out uploadResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return uploadResult{}, fmt.Errorf("upload %s: read answer: %w", path, err)
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
}

// Waits of follow between attempts.
const (
	// followRetries is how many attempts in a row may fail to reach the
	// service (a restart, a network blip) before follow gives up.
	followRetries = 10
	followBackoff = time.Second
)

// follow reads the job's event stream, GET /v1/jobs/{id}/events, calling
// onProgress for every event, until the done event, whose progress it
// returns. A stream the server ends without done (it does after an hour,
// and on shutdown) is opened again, and its first event is the current
// state; so is one that could not be reached, a few times, and a 429 for
// too many open streams after its Retry-After.
func (c *client) follow(ctx context.Context, id string, onProgress func(progress)) (progress, error) {
	path := "/v1/jobs/" + url.PathEscape(id) + "/events"
	failures := 0
	for {
		p, done, err := c.readEvents(ctx, path, onProgress)
		if done {
			return p, nil
		}
		wait := followBackoff
		var ae *apiError
		switch {
		case ctx.Err() != nil:
			return progress{}, ctx.Err()
		case errors.As(err, &ae) && ae.status == http.StatusTooManyRequests:
			wait = ae.retryAfter(followBackoff)
		case ae != nil:
			return progress{}, err // 401, 404: asking again will not help
		case err != nil:
			if failures++; failures >= followRetries {
				return progress{}, err
			}
		default:
			// The server ended the stream (an hour passed, or it shut
			// down): open it again, a little later, lest a proxy that cuts
			// every stream at once make this a busy loop.
			failures = 0
			wait = followBackoff / 5
		}
		select {
		case <-ctx.Done():
			return progress{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// readEvents reads one connection of the event stream. done reports the
// done event, with its progress.
func (c *client) readEvents(ctx context.Context, path string, onProgress func(progress)) (p progress, done bool, err error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, "", -1)
	if err != nil {
		return progress{}, false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // a job error can be long
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			event = "" // an event ends at a blank line
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))), &p); err != nil {
				return progress{}, false, fmt.Errorf("GET %s: %s event: %w", path, event, err)
			}
			if event == "done" {
				return p, true, nil
			}
			onProgress(p)
		}
	}
	return progress{}, false, sc.Err()
}

// retryAfter is the Retry-After the service sent with the error, else def.
func (e *apiError) retryAfter(def time.Duration) time.Duration {
	if e.retry > 0 {
		return e.retry
	}
	return def
}

func parseRetryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
