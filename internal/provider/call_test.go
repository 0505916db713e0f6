package provider_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

func TestRecordingClient(t *testing.T) {
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"error":"busy"}`))
	}))
	defer srv.Close()

	base := &http.Client{Timeout: time.Minute}
	client := provider.RecordingClient(base)
	if base.Transport != nil {
		t.Fatal("RecordingClient modified the client it was given")
	}
	if provider.RecordingClient(client) != client {
		t.Error("a recording client was wrapped a second time")
	}

	const key = "secret-key-123456"
	body := `{"image":"data:image/png;base64,` + b64(600) + `"}`
	ex, err := provider.Call(t.Context(), time.Second, key, func(ctx context.Context) error {
		// A body without GetBody: the transport must still send it whole.
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return errors.New("status " + resp.Status)
	})
	if gotBody != body {
		t.Errorf("server got %d bytes, want the %d sent", len(gotBody), len(body))
	}
	if ex.Calls() != 1 || ex.Status() != 503 || ex.RetryAfter() != 3*time.Second {
		t.Errorf("exchange: calls %d, status %d, retry-after %v", ex.Calls(), ex.Status(), ex.RetryAfter())
	}
	if got := ex.Request(key); got != `{"image":"data:image/png;base64,<elided 600 bytes>"}` {
		t.Errorf("recorded request = %q", got)
	}
	if got := ex.Response(key); got != `{"error":"busy"}` {
		t.Errorf("recorded response = %q", got)
	}
	pe := (*provider.Error)(nil)
	if !errors.As(err, &pe) || pe.Category != provider.CategoryServer || pe.RetryAfter != 3*time.Second {
		t.Errorf("err = %#v, want a server error with the Retry-After", err)
	}
}

func TestClassify(t *testing.T) {
	refused := func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = http.Get("http://" + addr)
		return err
	}()
	cases := []struct {
		name   string
		status int // recorded in the exchange
		err    error
		want   provider.Category
	}{
		{"an error status decides", 429, errors.New("sdk"), provider.CategoryRateLimit},
		// The request's bytes (a large page image), not the prompt's tokens.
		{"a body too large is an invalid request", 413, errors.New("sdk"), provider.CategoryInvalidRequest},
		{"a deadline is a timeout", 0, context.DeadlineExceeded, provider.CategoryTimeout},
		{"a refused connection is a network failure", 0, refused, provider.CategoryNetwork},
		{"an undecodable 200 is a server error", 200, errors.New("invalid character"), provider.CategoryServer},
		{"a request the SDK would not build is invalid", 0, errors.New("bad param"), provider.CategoryInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(c.status) }))
			defer srv.Close()
			_, err := provider.Call(t.Context(), time.Second, "", func(ctx context.Context) error {
				if c.status != 0 {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
					resp, err := provider.RecordingClient(nil).Do(req)
					if err != nil {
						return err
					}
					resp.Body.Close()
				}
				return c.err
			})
			pe := (*provider.Error)(nil)
			if !errors.As(err, &pe) || pe.Category != c.want || pe.Status != c.status {
				t.Fatalf("err = %v, want category %s, status %d", err, c.want, c.status)
			}
		})
	}

	t.Run("a caller's cancellation is not a provider error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		_, err := provider.Call(ctx, time.Second, "", func(context.Context) error {
			cancel()
			return context.Canceled
		})
		pe := (*provider.Error)(nil)
		if errors.As(err, &pe) || !errors.Is(err, context.Canceled) || !errors.Is(err, provider.ErrCallAbandoned) ||
			err.Error() != "provider call abandoned: context canceled" {
			t.Fatalf("err = %v, want ErrCallAbandoned wrapping context.Canceled", err)
		}
	})
}

// A key stored with a control character makes net/http refuse to send the
// request. That was classified a network failure and retried for ~85 s;
// every try fails alike, so it is an invalid request, not retried.
func TestAKeyHTTPCannotCarryIsAnInvalidRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request with an invalid header was sent")
	}))
	defer srv.Close()
	for _, key := range []string{"sk-1\n", "sk-1\r\nX: y", "sk\x00", "sk\x7f"} {
		_, err := provider.Call(t.Context(), time.Second, key, func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := provider.RecordingClient(nil).Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		})
		pe := (*provider.Error)(nil)
		if !errors.As(err, &pe) || pe.Category != provider.CategoryInvalidRequest || pe.Retryable() {
			t.Fatalf("key %q: err = %v, want an invalid request not retried", key, err)
		}
		if strings.Contains(pe.Err.Error(), strings.TrimSpace(key)) {
			t.Errorf("key %q: the cause holds the key: %v", key, pe.Err)
		}
	}
}

func TestIdentifier(t *testing.T) {
	for in, want := range map[string]string{
		"invalid_api_key":                  "invalid_api_key",
		"RESOURCE_EXHAUSTED":               "RESOURCE_EXHAUSTED",
		"Incorrect API key provided: sk-x": "?",
		strings.Repeat("a", 65):            "?",
	} {
		if got := provider.Identifier(in); got != want {
			t.Errorf("Identifier(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var elsewhere int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	_, err := provider.Call(t.Context(), time.Second, "", func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
		req.Header.Set("X-Api-Key", "k")
		resp, err := provider.RecordingClient(nil).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return errors.New("unexpected status")
	})
	pe := (*provider.Error)(nil)
	if !errors.As(err, &pe) || pe.Category != provider.CategoryInvalidRequest || pe.Status != 307 || elsewhere != 0 {
		t.Fatalf("err = %v, requests to the redirect target %d; want an invalid request, status 307, no request elsewhere", err, elsewhere)
	}
}

// A response past its call's limit (MaxResponseBytes for recognition,
// MaxAnswerBytes for a model-stage answer) fails its call after that much
// is read, however much more the server would send; a response of exactly
// the limit is read whole. Past the answer limit the call is not retried:
// the answer was billed.
func TestAnOversizedResponseFailsItsCall(t *testing.T) {
	tests := []struct {
		name      string
		call      func(context.Context, time.Duration, string, func(context.Context) error) (*provider.Exchange, error)
		limit     int
		sent      int
		wantErr   error
		permanent bool
	}{
		{"a recognition response past 64 MiB", provider.Call, provider.MaxResponseBytes, provider.MaxResponseBytes + 8<<20, provider.ErrResponseTooLarge, false},
		{"a model answer past 8 MiB", provider.CallChat, provider.MaxAnswerBytes, provider.MaxAnswerBytes + 1, provider.ErrAnswerTooLarge, true},
		{"a model answer of 8 MiB", provider.CallChat, provider.MaxAnswerBytes, provider.MaxAnswerBytes, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				chunk := []byte(strings.Repeat("x", 1<<20))
				for left := tt.sent; left > 0; left -= len(chunk) {
					if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
						return
					}
				}
			}))
			t.Cleanup(srv.Close)
			client := provider.RecordingClient(nil)
			read := 0
			ex, err := tt.call(context.Background(), 10*time.Second, "k", func(ctx context.Context) error {
				body, err := getBody(ctx, client, srv.URL)
				read = len(body)
				return err
			})
			if tt.wantErr == nil {
				if err != nil || read != tt.sent {
					t.Fatalf("err = %v, read %d of %d bytes; want the whole response", err, read, tt.sent)
				}
				return
			}
			pe := (*provider.Error)(nil)
			if !errors.As(err, &pe) || pe.Category != provider.CategoryServer || pe.Status != 200 || !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want a server error for the oversized answer", err)
			}
			if pe.Retryable() == tt.permanent {
				t.Errorf("retryable %t, want %t", pe.Retryable(), !tt.permanent)
			}
			if read != tt.limit {
				t.Errorf("read %d bytes, want %d and no more", read, tt.limit)
			}
			if ex.Status() != 200 {
				t.Errorf("status %d", ex.Status())
			}
		})
	}
}

// values is a JSON array whose brackets and commas count n values.
func values(n int) string {
	return "[" + strings.Repeat("0,", n-1) + "0]"
}

func TestAResponseOfTooManyJSONValuesFailsItsCall(t *testing.T) {
	const limit = provider.MaxResponseValues
	tests := []struct {
		name      string
		call      func(context.Context, time.Duration, string, func(context.Context) error) (*provider.Exchange, error)
		status    int
		body      string
		permanent bool // also: the call fails
		fails     bool
	}{
		{"a model answer of the limit's values is read whole", provider.CallChat, 200, values(limit), false, false},
		{"a model answer past the limit fails, not retried", provider.CallChat, 200, values(limit + 1), true, true},
		{"a recognition answer past the limit fails, as one too large", provider.Call, 200, values(limit + 1), false, true},
		{"values split across reads are counted", provider.CallChat, 200, `{"a":"x\"[",` + strings.Repeat(`"\\",{},`, limit/2) + `0}`, true, true},
		{"brackets and commas inside strings are no values", provider.CallChat, 200, `["` + strings.Repeat(`,[{\"`, limit) + `"]`, false, false},
		{"an error status's body is not counted", provider.CallChat, 500, values(limit + 1), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				// Small writes, so that the body comes in many reads.
				for b := tt.body; b != ""; b = b[min(len(b), 4093):] {
					if _, err := io.WriteString(w, b[:min(len(b), 4093)]); err != nil {
						return
					}
				}
			}))
			t.Cleanup(srv.Close)
			client := provider.RecordingClient(nil)
			var read []byte
			_, err := tt.call(context.Background(), 10*time.Second, "k", func(ctx context.Context) (err error) {
				read, err = getBody(ctx, client, srv.URL)
				return err
			})
			if !tt.fails {
				if err != nil || string(read) != tt.body {
					t.Fatalf("err = %v, read %d of %d bytes; want the whole response", err, len(read), len(tt.body))
				}
				return
			}
			pe := (*provider.Error)(nil)
			if !errors.As(err, &pe) || pe.Category != provider.CategoryServer || pe.Status != 200 || !errors.Is(err, provider.ErrTooManyValues) {
				t.Fatalf("err = %v, want a server error for too many values", err)
			}
			if pe.Retryable() == tt.permanent {
				t.Errorf("retryable %t, want %t", pe.Retryable(), !tt.permanent)
			}
			if want := "answer of more than 262144 JSON values"; !strings.Contains(pe.Error(), want) {
				t.Errorf("error %q does not say %q", pe.Error(), want)
			}
			if len(read) >= len(tt.body) {
				t.Errorf("read %d bytes of %d: the whole body", len(read), len(tt.body))
			}
		})
	}
}

// getBody GETs url through client and reads the answer's body.
func getBody(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
