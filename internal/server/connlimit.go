package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// This file bounds the connections the port holds open
// (DOCJOBS_MAX_CONNECTIONS) without letting connections that do nothing
// keep the others out.
//
// A cap alone (netutil.LimitListener) leaves a connection accepted past it
// in the listen queue until one of the open ones closes. An open one that
// waits for its client's next request keeps its place until IdleTimeout,
// two minutes, and one request renews it: a caller without a key held every
// place with keep-alive connections that each sent a /healthz now and then
// (audit-api3 F1). So when a connection arrives at the cap, the listener
// closes the open connection that has been doing nothing longest, and the
// new one takes its place; it waits only while every open connection is
// serving a request.
//
// What "doing nothing" is comes from http.Server.ConnState, and from the
// edge for the streams a caller without a key can hold:
//
//   - idle: HTTP/1.1 between requests (keep-alive), HTTP/2 (h2c, gRPC)
//     with no stream open. Closing one is what IdleTimeout does anyway.
//   - new for connGrace: accepted but no whole request head yet. A client
//     sends its request as it connects; one that has not after a second is
//     slow or silent (ReadHeaderTimeout would cut it at 10 s).
//   - held for connGrace only by streams that need no key and last as long
//     as their client wants (Health.Watch, server reflection) or by a
//     keyless call whose message has not arrived, or, on HTTP/2, by
//     answers whose handlers have returned but whose client gives no
//     window to send them: the other ways to keep a connection busy
//     without a key.
//
// A connection serving any other request (REST, a JobService call, an
// upload, a /readyz check) is never closed to make room; one whose client
// reads none of its answer is cut after IOIdleTimeout (writedeadline.go). Among the
// candidates, idle ones go first, then new ones that sent nothing, then
// those holding something (a keyless stream, the bytes of a request head
// not yet complete), each longest first.
//
// There is no share per remote address: behind a proxy or load balancer
// every connection comes from the proxy's address, and per-address limits
// on traffic without a key are the proxy's job (see "Request rate per
// account" in docs/decisions.md). Reclaiming is what makes the cap safe
// whatever the addresses.

// connGrace is how long a new connection may go without a whole request
// head, or a connection be held only by keyless streams, before it can be
// closed to make room.
const connGrace = time.Second

// connLimiter is a listener that holds at most max connections open and
// reclaims idle ones for connections that arrive at the cap.
type connLimiter struct {
	net.Listener
	max int
	now func() time.Time

	mu sync.Mutex
	// conns are the open connections, each at its index: a slice, because
	// the scan for one to close at the cap reads them all, and a slice of
	// 4096 reads in about a quarter of the time a map of them does.
	conns []*trackedConn
	// lists are the idle connections (listIdle) and the new ones
	// (listNew), each longest in its state first (a connection joins at
	// the tail as it enters the state): the one to close is nearly always
	// a head, found without reading every connection.
	lists   [2]connList
	wake    chan struct{} // closed on any change that may make room; nil: nobody waits
	closed  chan struct{} // closed by Close
	closing sync.Once
	// reclaimed is called for each connection closed to make room.
	reclaimed func()
}

func newConnLimiter(ln net.Listener, max int, now func() time.Time, reclaimed func()) *connLimiter {
	return &connLimiter{Listener: ln, max: max, now: now, reclaimed: reclaimed,
		closed: make(chan struct{})}
}

// Accept accepts the next connection, then waits until it has a place:
// at once below the cap, else as soon as an open connection can be
// reclaimed (which is then closed) or closes. The accepted connection waits
// here rather than in the listen queue so that the limiter knows someone
// needs a place; at most one does, since http.Server accepts in one loop.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	for {
		l.mu.Lock()
		now := l.now()
		if len(l.conns) < l.max {
			tc.state, tc.since = http.StateNew, now
			l.addLocked(tc)
			l.listLocked(tc, listNew)
			l.mu.Unlock()
			return tc, nil
		}
		victim, retry := l.victimLocked(now)
		if victim != nil {
			l.removeLocked(victim) // its place is free from now on
			l.mu.Unlock()
			l.reclaimed()
			_ = victim.closeConn()
			continue
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.mu.Unlock()
		if !l.wait(wake, retry) {
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// wait waits for wake, for retry (0: no time limit), or for Close, and
// reports whether the listener is still open.
func (l *connLimiter) wait(wake <-chan struct{}, retry time.Duration) bool {
	var timer <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-wake:
	case <-timer:
	case <-l.closed:
		return false
	}
	return true
}

// Close stops accepting, and ends a wait for a place.
func (l *connLimiter) Close() error {
	l.closing.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// open is the number of connections holding a place.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (l *connLimiter) addLocked(c *trackedConn) {
	c.index = len(l.conns)
	l.conns = append(l.conns, c)
}

// removeLocked takes c out of conns (index -1: not there), if it is in.
func (l *connLimiter) removeLocked(c *trackedConn) {
	if c.index < 0 {
		return
	}
	l.unlistLocked(c, listIdle)
	l.unlistLocked(c, listNew)
	last := l.conns[len(l.conns)-1]
	l.conns[c.index], last.index = last, c.index
	l.conns[len(l.conns)-1] = nil
	l.conns = l.conns[:len(l.conns)-1]
	c.index = -1
}

// The lists of connLimiter.lists.
const (
	listIdle = iota
	listNew
)

// connList is a list of connections, linked through their links[i].
type connList struct{ head, tail *trackedConn }

// connLink is a connection's place in one connList.
type connLink struct {
	on         bool
	prev, next *trackedConn
}

// listLocked puts c at the tail of list i.
func (l *connLimiter) listLocked(c *trackedConn, i int) {
	l.unlistLocked(c, i)
	list, link := &l.lists[i], &c.links[i]
	link.on, link.prev = true, list.tail
	if list.tail != nil {
		list.tail.links[i].next = c
	} else {
		list.head = c
	}
	list.tail = c
}

// unlistLocked takes c off list i, if it is on it.
func (l *connLimiter) unlistLocked(c *trackedConn, i int) {
	list, link := &l.lists[i], &c.links[i]
	if !link.on {
		return
	}
	if link.prev != nil {
		link.prev.links[i].next = link.next
	} else {
		list.head = link.next
	}
	if link.next != nil {
		link.next.links[i].prev = link.prev
	} else {
		list.tail = link.prev
	}
	*link = connLink{}
}

// changedLocked wakes an Accept waiting for a place.
func (l *connLimiter) changedLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// victimLocked returns the connection to close for a new one, or nil and
// how long until a connection now too young may become one (0: none will by
// age alone). The longest idle connection is the head of the idle list,
// and when none is idle the oldest new one is the head of the new list; the
// rest need a scan of every connection.
func (l *connLimiter) victimLocked(now time.Time) (victim *trackedConn, retry time.Duration) {
	if c := l.lists[listIdle].head; c != nil && c.reclaimRankLocked(now) == rankIdle {
		return c, 0
	}
	if c := l.lists[listNew].head; c != nil && l.lists[listIdle].head == nil && c.reclaimRankLocked(now) == rankSilent {
		return c, 0
	}
	return l.scanLocked(now)
}

// scanLocked is victimLocked reading every connection.
func (l *connLimiter) scanLocked(now time.Time) (victim *trackedConn, retry time.Duration) {
	var bestRank int
	for _, c := range l.conns {
		rank := c.reclaimRankLocked(now)
		switch {
		case rank == rankBusy:
			continue
		case rank == rankYoung:
			if wait := connGrace - now.Sub(c.since); wait > 0 && (retry == 0 || wait < retry) {
				retry = wait
			}
			continue
		case victim == nil, rank < bestRank, rank == bestRank && c.since.Before(victim.since):
			victim, bestRank = c, rank
		}
	}
	return victim, retry
}

// ConnState is the http.Server hook that tells the limiter what each
// connection is doing.
func (l *connLimiter) ConnState(nc net.Conn, st http.ConnState) {
	c := trackedFrom(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateClosed:
		return // Close has removed it
	case http.StateNew:
		return // Accept has set it
	}
	if c.index < 0 {
		// Closed to make room, or closed: it no longer counts. HTTP/2
		// reports such a connection idle after it was taken out (it closes
		// the streams that were open, then the connection); listed again,
		// it would be a connection that is not there (audit review1 F1).
		return
	}
	c.state, c.since = st, l.now()
	c.read.Store(false)
	l.unlistLocked(c, listNew)
	if st == http.StateIdle {
		l.listLocked(c, listIdle)
		l.changedLocked()
	} else {
		l.unlistLocked(c, listIdle)
	}
}

// ConnContext is the http.Server hook that lets a request find its
// connection (connFrom).
func (l *connLimiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c := trackedFrom(nc); c != nil {
		return context.WithValue(ctx, trackedConnKey{}, c)
	}
	return ctx
}

type trackedConnKey struct{}

// connFrom is the connection a request arrived on, nil when it did not
// come through a connLimiter (tests' recorders).
func connFrom(ctx context.Context) *trackedConn {
	c, _ := ctx.Value(trackedConnKey{}).(*trackedConn)
	return c
}

// trackedFrom finds the connection the limiter accepted behind nc: nc
// itself, or the one inside the *tls.Conn that net/http wraps an HTTP/2
// connection in clear text in to hand it to its HTTP/2 server. (Its HTTP/2
// server unwraps it again before it calls the hooks, so that a hook cannot
// tell HTTP/2 from HTTP/1: trackedConn.Read does, from the preface.)
func trackedFrom(nc net.Conn) *trackedConn {
	if tc, ok := nc.(*tls.Conn); ok {
		u, ok := tc.NetConn().(interface{ UnencryptedNetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = u.UnencryptedNetConn()
	}
	c, _ := nc.(*trackedConn)
	return c
}

// trackedConn is a connection the limiter counts.
type trackedConn struct {
	net.Conn
	l *connLimiter

	// Guarded by l.mu:
	index int         // in l.conns; -1 once out
	links [2]connLink // in l.lists
	state http.ConnState
	since time.Time // when state, or being held, last changed
	// requests are the handlers running on the connection (HTTP/2: one a
	// stream); held are those of them that only a keyless client keeps
	// going (holdKeyless).
	requests, held int

	// read is set when a byte arrived since state last changed: on an
	// HTTP/1 connection that is idle or new, the head of a request that
	// net/http has not finished reading.
	read atomic.Bool
	// h2 is set once the connection's first bytes were the HTTP/2
	// preface (h2c, gRPC): such a connection reads pings and settings
	// while idle, which are no request head in part.
	h2 atomic.Bool
	// prefaceRead is how many of the first bytes matched the preface, -1
	// once one did not. Only Read uses it, and net/http never reads a
	// connection from two goroutines at once.
	prefaceRead int
	close       sync.Once
}

// h2Preface is what an HTTP/2 client sends first (RFC 9113, 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		if c.prefaceRead >= 0 && c.prefaceRead < len(h2Preface) {
			c.matchPreface(b[:n])
		}
		c.read.Store(true)
	}
	return n, err
}

// matchPreface compares the first bytes read with the HTTP/2 preface, which
// net/http reads in more than one piece.
func (c *trackedConn) matchPreface(b []byte) {
	rest := h2Preface[c.prefaceRead:]
	k := min(len(b), len(rest))
	if string(b[:k]) != rest[:k] {
		c.prefaceRead = -1
		return
	}
	c.prefaceRead += k
	if c.prefaceRead == len(h2Preface) {
		c.h2.Store(true)
	}
}

// Close closes the connection and frees its place.
func (c *trackedConn) Close() error {
	err := c.closeConn()
	c.l.mu.Lock()
	if c.index >= 0 {
		c.l.removeLocked(c)
		c.l.changedLocked()
	}
	c.l.mu.Unlock()
	return err
}

// closeConn closes the network connection once.
func (c *trackedConn) closeConn() error {
	err := net.ErrClosed
	c.close.Do(func() { err = c.Conn.Close() })
	return err
}

// Ranks of a connection for reclaimRankLocked: the lowest is closed
// first, and among equals the one in its state longest.
const (
	rankIdle    = iota // idle, nothing of a next request read
	rankSilent         // new for connGrace, no byte read
	rankHolding        // held for connGrace only by keyless work, or part of a request head read
	rankYoung          // may be closed once connGrace has passed
	rankBusy           // serving a request
)

// reclaimRankLocked tells whether, and how soon, the connection may be
// closed to make room.
func (c *trackedConn) reclaimRankLocked(now time.Time) int {
	partial := !c.h2.Load() && c.read.Load() // HTTP/2 reads pings and settings while idle
	young := now.Sub(c.since) < connGrace
	switch {
	case c.requests > c.held:
		return rankBusy
	case c.requests > 0: // held only by keyless work
		if young {
			return rankYoung
		}
		return rankHolding
	case c.state == http.StateIdle:
		if partial {
			return rankHolding
		}
		return rankIdle
	case c.state == http.StateNew:
		switch {
		case young:
			return rankYoung
		case partial:
			return rankHolding
		}
		return rankSilent
	case c.h2.Load() && c.state == http.StateActive:
		// HTTP/2 with streams open whose handlers have all returned, for
		// connGrace: what is left is an answer its client takes no window
		// for (or a stream it opened and sends nothing on), which held the
		// connection busy for ever without a key (audit review1 F2).
		if young {
			return rankYoung
		}
		return rankHolding
	}
	// Active with no handler running: HTTP/1 between its head and its
	// handler, or writing out an answer. Hijacked connections are their
	// handler's.
	return rankBusy
}

// beginRequest counts a handler running on the connection of ctx until
// endRequest is called on what it returns (nil without a connection).
func beginRequest(ctx context.Context) *trackedConn {
	c := connFrom(ctx)
	if c == nil {
		return nil
	}
	c.l.mu.Lock()
	c.requests++
	c.l.mu.Unlock()
	return c
}

// endRequest ends what beginRequest counted.
func (c *trackedConn) endRequest() {
	if c == nil {
		return
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.requests--
	if c.requests == c.held {
		c.since = c.l.now()
		c.l.changedLocked()
	}
}

// holdKeyless marks the request of ctx, already counted by beginRequest, as
// one only its keyless client keeps going (a Health.Watch or reflection
// stream, a keyless call waiting for its message), until release is
// called: a connection held by nothing else can be closed to make room.
func holdKeyless(ctx context.Context) (release func()) {
	c := connFrom(ctx)
	if c == nil {
		return func() {}
	}
	c.l.mu.Lock()
	c.held++
	if c.requests == c.held {
		c.since = c.l.now()
		c.l.changedLocked()
	}
	c.l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.l.mu.Lock()
			defer c.l.mu.Unlock()
			c.held--
		})
	}
}
