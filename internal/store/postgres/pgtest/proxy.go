package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// BehindProxy returns url with its host replaced by a TCP proxy to it, and
// cut, which closes the proxy's port (connections are then refused) and
// every connection made through it: a database server gone away, for tests
// of what a store does during an outage. The proxy is closed after the
// test.
func BehindProxy(t testing.TB, rawURL string) (proxied string, cut func()) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
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
				return
			}
			go func() { _, _ = io.Copy(d, c); _ = d.Close() }()
			go func() { _, _ = io.Copy(c, d); _ = c.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	return u.String(), p.close
}

type proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	closed bool
	conns  []net.Conn
}

// track records the two ends of a proxied connection, or closes them when
// the proxy is closed already.
func (p *proxy) track(c ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
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
