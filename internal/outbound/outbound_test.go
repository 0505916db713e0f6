package outbound

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"code.dny.dev/ssrf"
)

// serveOn starts an HTTP server on ip (a loopback address such as
// 127.0.0.2, which Linux routes without configuration).
func serveOn(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func hello() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestLoopbackRefusedByDefault(t *testing.T) {
	srv := serveOn(t, "127.0.0.1", hello())
	c := NewClient(Config{})
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		_, err := get(t, c, u)
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("GET %s = %v, want ErrForbiddenAddress", u, err)
		}
		if !errors.Is(err, ssrf.ErrProhibitedIP) {
			t.Errorf("GET %s = %v, want the ssrf cause kept", u, err)
		}
	}
}

func TestLoopbackAllowedWithAllowPrivate(t *testing.T) {
	srv := serveOn(t, "127.0.0.1", hello())
	body, err := get(t, NewClient(Config{AllowPrivate: true}), srv.URL)
	if err != nil || body != "hello" {
		t.Fatalf("GET = %q, %v; want hello", body, err)
	}
}

// The files of one job often come from one host at once; the next job's
// files reuse those connections instead of connecting again.
func TestBurstsToOneHostReuseConnections(t *testing.T) {
	const burst = 10
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(30 * time.Millisecond) // the whole burst is in flight at once
		_, _ = io.WriteString(w, "hello")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := NewClient(Config{AllowPrivate: true, IdleConnsPerHost: burst})
	for range 3 {
		var wg sync.WaitGroup
		for range burst {
			wg.Go(func() {
				if body, err := get(t, client, srv.URL); err != nil || body != "hello" {
					t.Errorf("GET = %q, %v", body, err)
				}
			})
		}
		wg.Wait()
	}
	if n := opened.Load(); n > burst {
		t.Errorf("three bursts of %d requests opened %d connections, want at most %d", burst, n, burst)
	}
}

// publicLoopback admits 127.0.0.1 as if it were a public address, so a test
// can reach a first hop and watch the client refuse the next one.
func publicLoopback() ssrf.Option {
	return ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.1/32"))
}

func TestRedirectToForbiddenAddressRefused(t *testing.T) {
	internal := serveOn(t, "127.0.0.2", hello())
	public := serveOn(t, "127.0.0.1", http.RedirectHandler(internal.URL+"/secret", http.StatusFound))
	c := newClient(Config{}, publicLoopback())

	// The first hop alone is reachable: the test set-up is sound.
	direct := serveOn(t, "127.0.0.1", hello())
	if body, err := get(t, c, direct.URL); err != nil || body != "hello" {
		t.Fatalf("GET first hop = %q, %v", body, err)
	}

	_, err := get(t, c, public.URL)
	if !errors.Is(err, ErrForbiddenAddress) {
		t.Fatalf("GET redirecting to 127.0.0.2 = %v, want ErrForbiddenAddress", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.2") {
		t.Errorf("error %q does not name the refused address", err)
	}
}

func TestRedirectRules(t *testing.T) {
	var hops int
	chain := http.NewServeMux()
	chain.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		hops++
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	chain.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.com/file.pdf", http.StatusFound)
	})
	chain.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	chain.HandleFunc("/once", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
	})
	chain.Handle("/ok", hello())
	srv := serveOn(t, "127.0.0.1", chain)

	tests := []struct {
		name     string
		cfg      Config
		path     string
		wantErr  error
		wantBody string
	}{
		{name: "one redirect is followed", cfg: Config{AllowPrivate: true}, path: "/once", wantBody: "hello"},
		{name: "endless redirects stop at the cap", cfg: Config{AllowPrivate: true, MaxRedirects: 3}, path: "/loop", wantErr: ErrTooManyRedirects},
		{name: "redirect to ftp refused", cfg: Config{AllowPrivate: true}, path: "/ftp", wantErr: ErrBadRedirect},
		{name: "redirect to file refused", cfg: Config{AllowPrivate: true}, path: "/file", wantErr: ErrBadRedirect},
		{name: "negative MaxRedirects returns the 3xx", cfg: Config{AllowPrivate: true, MaxRedirects: -1}, path: "/once", wantBody: "<a href=\"/ok\">Moved Permanently</a>.\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hops = 0
			body, err := get(t, NewClient(tt.cfg), srv.URL+tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("GET = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || body != tt.wantBody {
				t.Fatalf("GET = %q, %v; want %q", body, err, tt.wantBody)
			}
		})
	}
	if hops > 4 {
		t.Errorf("server saw %d hops with MaxRedirects 3", hops)
	}
}

func TestControlByAddress(t *testing.T) {
	tests := []struct {
		addr         string
		allowPrivate bool
		refused      bool
	}{
		{"8.8.8.8:443", false, false},
		{"[2001:4860:4860::8888]:443", false, false},
		{"93.184.216.34:8080", false, false},
		{"127.0.0.1:80", false, true},
		{"0.0.0.0:80", false, true},
		{"10.1.2.3:80", false, true},
		{"172.16.0.1:80", false, true},
		{"192.168.1.1:80", false, true},
		{"100.64.0.1:80", false, true},      // CGNAT
		{"169.254.1.1:80", false, true},     // link-local
		{"169.254.169.254:80", false, true}, // metadata
		{"[::1]:80", false, true},
		{"[fe80::1]:80", false, true},
		{"[fc00::1]:80", false, true},
		{"[::ffff:127.0.0.1]:80", false, true},   // IPv4-mapped loopback
		{"[::ffff:10.0.0.1]:80", false, true},    // IPv4-mapped private
		{"[64:ff9b::7f00:1]:80", false, true},    // NAT64 of 127.0.0.1
		{"[64:ff9b::a9fe:a9fe]:80", false, true}, // NAT64 of 169.254.169.254
		{"127.0.0.1:80", true, false},
		{"10.1.2.3:80", true, false},
		{"[::1]:80", true, false},
		{"169.254.169.254:80", true, true},
		{"[::ffff:169.254.169.254]:80", true, true},
		{"[fd00:ec2::254]:80", true, true},
		{"100.100.100.200:80", true, true},
	}
	for _, tt := range tests {
		name := tt.addr
		if tt.allowPrivate {
			name += " with AllowPrivate"
		}
		t.Run(name, func(t *testing.T) {
			network := "tcp4"
			if strings.HasPrefix(tt.addr, "[") {
				network = "tcp6"
			}
			err := control(tt.allowPrivate, nil)(network, tt.addr, nil)
			if tt.refused != errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("control(%s) = %v, refused want %v", tt.addr, err, tt.refused)
			}
		})
	}
}

func TestClientIgnoresEnvironmentProxy(t *testing.T) {
	c := NewClient(Config{})
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatal("transport must not use a proxy: it would connect on the client's behalf, unchecked")
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url     string
		wantErr string
	}{
		{"https://example.com/a.pdf", ""},
		{"http://example.com:8080/a.pdf?sig=abc", ""},
		{"HTTPS://EXAMPLE.COM/", ""},
		{"http://[2001:db8::1]/x", ""},
		{"", "must not be empty"},
		{"example.com/a.pdf", "must be an absolute http or https URL"},
		{"/v1/files/abc", "must be an absolute http or https URL"},
		{"ftp://example.com/a.pdf", "must be an absolute http or https URL"},
		{"file:///etc/passwd", "must be an absolute http or https URL"},
		{"javascript:alert(1)", "must be an absolute http or https URL"},
		{"http:///path", "with a host"},
		{"http:example.com", "with a host"},
		{"https://user:pass@example.com/", "must not contain user credentials"},
		{"https://token@example.com/", "must not contain user credentials"},
		{"http://example.com:99999/", "invalid port"},
		{"http://example.com:0/", "invalid port"},
		{"http://example.com:65536/", "invalid port"},
		{"http://example.com:65535/", ""},
		{"http://example.com:/", ""},
		{"http://exa mple.com/", "is not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := CheckURL(tt.url)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckURL = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
