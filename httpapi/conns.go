package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// ConnLimits bound what clients may hold of the server: how many connections at
// once, and for how long each may take to send a request or sit idle.
type ConnLimits struct {
	// Total caps the connections open at once; PerAddress those of one client
	// address (0: no cap — behind a proxy, every client has the proxy's address).
	// Past either, a new connection gets 503 overloaded and is closed, after the
	// server has closed a quiet connection (idle between requests, or silent since it
	// opened) to make room if it has one.
	Total, PerAddress int
	// HeaderTimeout is how long a request's head may take, BodyTimeout its body,
	// IdleTimeout a kept-alive connection's wait for the next request, and
	// WriteTimeout one write of an answer to a client that does not read. A stream
	// or a long wait lives as long as it writes.
	HeaderTimeout, BodyTimeout, IdleTimeout, WriteTimeout time.Duration
}

// DefaultConnLimits are turnlog serve's defaults (docs/api.md, "Limits").
var DefaultConnLimits = ConnLimits{Total: 8192, PerAddress: 256,
	HeaderTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, WriteTimeout: 30 * time.Second}

// quietAfter is how long a connection may stay silent after it opened before it
// counts as quiet (closed first to make room).
const quietAfter = time.Second

// refusers caps the connections being answered 503 at once; past it a connection
// is closed without an answer.
const refusers = 256

// Descriptors is how many descriptors a server within l may hold at once: its
// connections, and those it is answering 503.
func (l ConnLimits) Descriptors() int { return l.Total + refusers }

// HTTPServer is an http.Server that keeps to ConnLimits, on the listener it
// wraps.
type HTTPServer struct {
	*http.Server
	ln *cappedListener
}

// NewHTTPServer serves h on ln within l.
func NewHTTPServer(h http.Handler, ln net.Listener, l ConnLimits) *HTTPServer {
	cl := &cappedListener{Listener: ln, limits: l, perAddr: map[netip.Addr]int{}, quiet: map[*cappedConn]struct{}{},
		refusing: make(chan struct{}, refusers)}
	srv := &http.Server{
		Handler:           deadlines(h, l),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		ConnState:         cl.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	return &HTTPServer{Server: srv, ln: cl}
}

// Serve serves on the capped listener until Shutdown or Close.
func (s *HTTPServer) Serve() error { return s.Server.Serve(s.ln) }

// Refused counts the connections answered 503 overloaded (or closed unanswered)
// since the server started.
func (s *HTTPServer) Refused() int64 { return s.ln.refused.Load() }

// Open is how many connections are open now.
func (s *HTTPServer) Open() int {
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	return s.ln.open
}

type cappedListener struct {
	net.Listener
	limits   ConnLimits
	mu       sync.Mutex
	open     int
	perAddr  map[netip.Addr]int
	quiet    map[*cappedConn]struct{} // idle between requests, or new (since when)
	refusing chan struct{}
	refused  atomic.Int64
}

type cappedConn struct {
	net.Conn
	l       *cappedListener
	addr    netip.Addr
	opened  time.Time
	fresh   bool // no request read yet
	evicted bool // picked to be closed: no request of it may begin
	once    sync.Once
}

// connKey finds a request's *cappedConn in its context.
type connKey struct{}

// begin marks c busy as a request's handler starts, unless c was picked to be
// closed to make room; then the request must not run (false).
func (l *cappedListener) begin(c *cappedConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.evicted {
		return false
	}
	c.fresh = false
	delete(l.quiet, c)
	return true
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		l.open--
		if l.perAddr[c.addr]--; l.perAddr[c.addr] <= 0 {
			delete(l.perAddr, c.addr)
		}
		delete(l.quiet, c)
		l.mu.Unlock()
	})
	return err
}

// Accept returns the next connection within the caps, answering those past them.
func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := remoteAddr(raw)
		if c, evict := l.admit(raw, addr); c != nil {
			if evict != nil {
				evict.Close()
			}
			return c, nil
		}
		l.refuse(raw)
	}
}

// admit counts a new connection in, or says it is past a cap (nil). To make room
// it picks a quiet connection to close: of the same address when that address is
// at its cap.
func (l *cappedListener) admit(raw net.Conn, addr netip.Addr) (c, evict *cappedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	atAddr := l.limits.PerAddress > 0 && l.perAddr[addr] >= l.limits.PerAddress
	atTotal := l.limits.Total > 0 && l.open >= l.limits.Total
	if atAddr || atTotal {
		now := time.Now()
		for q := range l.quiet {
			if (!atAddr || q.addr == addr) && (!q.fresh || now.Sub(q.opened) >= quietAfter) {
				evict = q
				break
			}
		}
		if evict == nil {
			return nil, nil
		}
		evict.evicted = true   // a request it has begun to send never runs
		delete(l.quiet, evict) // counted out when it closes, just after
	}
	c = &cappedConn{Conn: raw, l: l, addr: addr, opened: time.Now(), fresh: true}
	l.open++
	l.perAddr[addr]++
	l.quiet[c] = struct{}{}
	return c, evict
}

// track follows each connection's state: a connection between requests is quiet.
func (l *cappedListener) track(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*cappedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateIdle:
		c.fresh = false
		if !c.evicted {
			l.quiet[c] = struct{}{}
		}
	case http.StateActive:
		c.fresh = false
		delete(l.quiet, c)
	case http.StateHijacked, http.StateClosed:
		delete(l.quiet, c)
	}
}

// refuse answers a connection past the caps 503 overloaded and closes it, within
// a second; when many are being answered already, it just closes it.
func (l *cappedListener) refuse(c net.Conn) {
	l.refused.Add(1)
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		body := fmt.Sprintf(`{"error":{"code":"overloaded","message":"turnlog holds as many connections as it may (%d in all, %d per client address): try again shortly"}}`,
			l.limits.Total, l.limits.PerAddress)
		_, err := fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if err != nil {
			return
		}
		// Read what the client sent before closing, so the close does not reset the
		// connection before it reads the answer.
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = io.CopyN(io.Discard, c, 64<<10)
	}()
}

// remoteAddr is the client a connection counts against: its IPv4 address, or the
// /64 of its IPv6 address (one host usually holds a whole /64).
func remoteAddr(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

// errBodyTimeout is a body that took longer than BodyTimeout.
var errBodyTimeout = errors.New("the request body was not sent in time")
