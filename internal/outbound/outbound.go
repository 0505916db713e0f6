// Package outbound builds the HTTP client docjobs uses to reach addresses a
// caller chose: source URLs and webhook URLs. The client refuses, at connect
// time, loopback, private, link-local, CGNAT, cloud metadata and other
// special-purpose addresses (IPv4 and IPv6, including IPv4-mapped and NAT64
// forms), so neither DNS rebinding nor a redirect can reach them. It never
// uses an environment proxy, which would bypass the check.
package outbound

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// ErrForbiddenAddress is wrapped by every error of a connection the client
// refused because of its destination address.
var ErrForbiddenAddress = errors.New("refused: private or reserved address")

// ErrTooManyRedirects is wrapped by the error of a request that exceeded
// Config.MaxRedirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// ErrBadRedirect is wrapped by the error of a request redirected to a
// location that is not an http or https URL.
var ErrBadRedirect = errors.New("redirect to a non-http(s) location")

// Defaults applied by NewClient to zero Config fields.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultMaxRedirects = 5
	// DefaultIdleConnsPerHost is Config.IdleConnsPerHost's default.
	DefaultIdleConnsPerHost = 4
)

// Config configures NewClient.
type Config struct {
	// AllowPrivate lets the client connect to loopback, private, link-local
	// and CGNAT addresses (DOCJOBS_ALLOW_PRIVATE_URLS). Cloud metadata
	// endpoints stay refused even then: no document lives there, and they
	// hand out credentials.
	AllowPrivate bool
	// Timeout bounds a whole request including reading the body; 0 means
	// DefaultTimeout, negative means none (the caller's context decides).
	Timeout time.Duration
	// MaxRedirects caps the redirects followed; 0 means DefaultMaxRedirects,
	// negative means none are followed (the 3xx response is returned).
	MaxRedirects int
	// IdleConnsPerHost is how many idle connections to one host are kept
	// for the next request; 0 means DefaultIdleConnsPerHost. A job's files
	// often come from one host at once, so the fetch client keeps as many
	// as files are fetched at a time instead of reconnecting (and
	// repeating the TLS handshake) for most files of the next job.
	IdleConnsPerHost int
}

// metadataAddrs are cloud instance-metadata endpoints, refused even with
// AllowPrivate. 169.254.169.254 (AWS, GCP, Azure, OpenStack…),
// fd00:ec2::254 (AWS IPv6), 100.100.100.200 (Alibaba Cloud).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
}

// NewClient returns an http.Client that checks every connection it opens,
// including those made for redirects.
func NewClient(cfg Config) *http.Client {
	return newClient(cfg)
}

// newClient takes extra ssrf options so tests can admit one loopback
// address as a "public" first hop.
func newClient(cfg Config, opts ...ssrf.Option) *http.Client {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		cfg.Timeout = 0
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.IdleConnsPerHost <= 0 {
		cfg.IdleConnsPerHost = DefaultIdleConnsPerHost
	}

	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   control(cfg.AllowPrivate, opts),
	}
	transport := &http.Transport{
		Proxy:                  nil, // an environment proxy would make the dial-time check moot
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           max(64, 4*cfg.IdleConnsPerHost),
		MaxIdleConnsPerHost:    cfg.IdleConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       cfg.Timeout,
		CheckRedirect: checkRedirect(cfg.MaxRedirects),
	}
}

// control is the dialer's Control hook: it sees the resolved IP of every
// connection attempt, after DNS, so a name that resolves (or re-resolves) to
// a forbidden address is caught.
func control(allowPrivate bool, opts []ssrf.Option) func(network, address string, c syscall.RawConn) error {
	// Any port: the danger is the address, and documents are served on
	// 8080, 8443 and others as often as on 80 and 443.
	opts = append([]ssrf.Option{ssrf.WithAnyPort()}, opts...)
	guard := ssrf.New(opts...)
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse %s: %w", ErrForbiddenAddress, address, err)
		}
		ip := ap.Addr().Unmap()
		for _, m := range metadataAddrs {
			if ip == m {
				return fmt.Errorf("%w %s (cloud metadata endpoint)", ErrForbiddenAddress, ap.Addr())
			}
		}
		if allowPrivate {
			return nil
		}
		if err := guard.Safe(network, address, nil); err != nil {
			return fmt.Errorf("%w %s: %w", ErrForbiddenAddress, ap.Addr(), err)
		}
		return nil
	}
}

func checkRedirect(max int) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if max < 0 {
			return http.ErrUseLastResponse
		}
		if len(via) > max {
			return fmt.Errorf("%w (more than %d)", ErrTooManyRedirects, max)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: scheme %q", ErrBadRedirect, req.URL.Scheme)
		}
		// The next connection is checked by the dialer like the first.
		return nil
	}
}

// CheckURL reports whether raw is acceptable as a source or webhook URL: an
// absolute http or https URL with a host and without user credentials. It
// does not resolve the host; the client checks addresses when it connects.
// The error is a short phrase meant to follow a field name
// ("sourceUrls[0]: must be an absolute http or https URL").
func CheckURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("must not be empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return errors.New("must be an absolute http or https URL with a host")
	}
	if u.User != nil {
		return errors.New("must not contain user credentials")
	}
	if !PortInRange(u.Port()) {
		return errors.New("has an invalid port")
	}
	return nil
}

// PortInRange reports whether p, a URL's port as url.URL.Port gives it, is
// one a dial can reach: 1–65535, or empty for the scheme's default.
// url.Parse takes any digits as a port, and port 0 dials nowhere.
func PortInRange(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// Redact returns u as text without user credentials, for messages and logs.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	return c.String()
}
