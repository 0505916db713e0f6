package pgtest

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// BehindProxy returns url with its host replaced by a TCP proxy to it, and
// cut, which closes the proxy's port (connections are then refused) and
// every connection made through it: a database server gone away, for tests
// of what a store does during an outage. The proxy is closed after the
// test.
func BehindProxy(t testing.TB, rawURL string) (proxied string, cut func()) {
	t.Helper()
	proxied, p, _ := behindProxy(t, rawURL)
	return proxied, p.close
}

// CountingRoundTrips returns url with its host replaced by a TCP proxy to
// it, and the number of round trips made through it so far: the server's
// ReadyForQuery messages, one for each query or Sync a client waits on
// (connection set-up included). rawURL must not ask for TLS.
func CountingRoundTrips(t testing.TB, rawURL string) (proxied string, roundTrips func() int64) {
	t.Helper()
	proxied, _, n := behindProxy(t, rawURL)
	return proxied, n.Load
}

// Switch returns url with its host replaced by a TCP proxy to it, and
// down and up: down cuts every connection made through the proxy and
// refuses new ones (they are accepted and closed) until up, a database
// server away for a while. The proxy is closed after the test.
func Switch(t testing.TB, rawURL string) (proxied string, down, up func()) {
	t.Helper()
	proxied, p, _ := behindProxy(t, rawURL)
	return proxied, p.down, p.up
}

func behindProxy(t testing.TB, rawURL string) (proxied string, p *proxy, roundTrips *atomic.Int64) {
	t.Helper()
	roundTrips = &atomic.Int64{}
	proxied, p = listenProxy(t, rawURL, func(c, d net.Conn) {
		go func() { _, _ = io.Copy(d, c); _ = d.Close() }()
		go func() { _, _ = io.Copy(io.MultiWriter(c, &readyCounter{n: roundTrips}), d); _ = c.Close() }()
	})
	return proxied, p, roundTrips
}

// listenProxy starts a TCP proxy to rawURL's host and returns rawURL with
// its host replaced by the proxy's. Each connection accepted is dialled
// through, tracked, and handed to link as client side c and server side d
// to copy between them. The proxy is closed after the test.
func listenProxy(t testing.TB, rawURL string, link func(c, d net.Conn)) (proxied string, p *proxy) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p = &proxy{ln: ln}
	t.Cleanup(p.close)
	target := u.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			if !p.track(c, d) {
				continue // down, or closed: Accept fails next
			}
			link(c, d)
		}
	}()
	u.Host = ln.Addr().String()
	return u.String(), p
}

// readyCounter reads a server's side of the protocol (type byte, int32
// length, body) and counts its ReadyForQuery ('Z') messages.
type readyCounter struct {
	n      *atomic.Int64
	header []byte // of the message being read, until it is whole
	skip   int    // body bytes of the current message still to come
}

func (r *readyCounter) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 {
		if r.skip > 0 {
			k := min(r.skip, len(b))
			r.skip, b = r.skip-k, b[k:]
			continue
		}
		k := min(5-len(r.header), len(b))
		r.header, b = append(r.header, b[:k]...), b[k:]
		if len(r.header) < 5 {
			continue
		}
		if r.header[0] == 'Z' {
			r.n.Add(1)
		}
		r.skip = int(binary.BigEndian.Uint32(r.header[1:])) - 4
		r.header = r.header[:0]
	}
	return total, nil
}

type proxy struct {
	ln          net.Listener
	mu          sync.Mutex
	closed, off bool
	conns       []net.Conn
}

// track records the two ends of a proxied connection, or closes them when
// the proxy is closed or down.
func (p *proxy) track(c ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.off {
		for _, x := range c {
			_ = x.Close()
		}
		return false
	}
	p.conns = append(p.conns, c...)
	return true
}

// close stops listening and cuts every connection made through the proxy.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// down cuts every connection made through the proxy and refuses new ones
// until up.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = false
}

// Orphaning returns url with its host replaced by a TCP proxy to it, and
// orphan: orphan(port) closes the client's side of the proxied connection
// whose session has client_port port (pg_stat_activity), and not the
// server's. The client sees its connection end while the session, and
// the locks it holds, live on: the server has not yet noticed (a
// terminated session still exiting, a half-open connection). end closes
// the server's side too, which ends the session; ok is false when no
// connection has that port. The proxy is closed after the test.
func Orphaning(t testing.TB, rawURL string) (proxied string, orphan func(port int) (end func(), ok bool)) {
	t.Helper()
	var mu sync.Mutex
	type link struct {
		client, server net.Conn
		orphaned       atomic.Bool
	}
	links := map[int]*link{} // by the server side's local port
	proxied, _ = listenProxy(t, rawURL, func(c, d net.Conn) {
		l := &link{client: c, server: d}
		mu.Lock()
		links[d.LocalAddr().(*net.TCPAddr).Port] = l
		mu.Unlock()
		go func() {
			_, _ = io.Copy(d, c)
			if !l.orphaned.Load() {
				_ = d.Close()
			}
		}()
		go func() { _, _ = io.Copy(c, d); _ = c.Close() }()
	})
	return proxied, func(port int) (func(), bool) {
		mu.Lock()
		l := links[port]
		mu.Unlock()
		if l == nil {
			return nil, false
		}
		l.orphaned.Store(true)
		_ = l.client.Close()
		return func() { _ = l.server.Close() }, true
	}
}
