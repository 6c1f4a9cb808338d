package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HostCheck says whether a command may reach host (a name or an address, no port):
// nil lets it through; an error says why not. ctx is the Run's.
type HostCheck func(ctx context.Context, host string) error

// HostDecision is one host a command asked the proxy for, and what it was told.
type HostDecision struct {
	Host    string `json:"host"`
	Port    string `json:"port"`
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
}

// proxy is the only way out of a network-allowlist sandbox: an HTTP proxy (CONNECT
// for TLS, absolute URLs for plain HTTP) listening inside the command's network
// namespace, which dials out from turnlog's for the hosts check allows. Names are
// resolved here, never by the command.
type proxy struct {
	ctx       context.Context
	check     HostCheck
	neverDial []string
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	resolve   func(ctx context.Context, host string) ([]net.IP, error)
	limits    proxyLimits

	mu        sync.Mutex
	decisions []HostDecision
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
	open      int       // the command's connections being served
	tokens    float64   // new connections it may open now (a bucket refilled at limits.perSecond)
	refilled  time.Time // when tokens was last refilled
	refused   int       // connections refused past a cap
}

const proxyDialTimeout = 15 * time.Second

// The proxy's caps, so that no command can turn it on turnlog: each connection it
// serves holds two of turnlog's descriptors (the command's and the one out).
const (
	// DefaultProxyConnections is what one command may hold open through the proxy at
	// once; DefaultProxyRate how many it may open a second (in bursts up to the
	// first).
	DefaultProxyConnections = 32
	DefaultProxyRate        = 16
	// ProxyTotal caps the connections the proxies of all of turnlog's commands
	// serve at once.
	ProxyTotal = 512
	// proxyHeaderTimeout is how long a request's head may take to arrive;
	// proxyIdleTimeout how long a connection may carry nothing either way.
	proxyHeaderTimeout = 10 * time.Second
	proxyIdleTimeout   = 2 * time.Minute
)

// proxyLimits are one command's caps.
type proxyLimits struct {
	conns     int
	perSecond float64
	header    time.Duration
	idle      time.Duration
}

// proxiedTotal counts the connections every proxy of this process serves (a
// process-wide resource, like its descriptors).
var proxiedTotal atomic.Int64

func newProxy(ctx context.Context, spec Spec) *proxy {
	dial, resolve := spec.Dial, spec.Resolve
	if dial == nil {
		dial = (&net.Dialer{Timeout: proxyDialTimeout}).DialContext
	}
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		}
	}
	lim := proxyLimits{conns: spec.ProxyConnections, perSecond: float64(spec.ProxyRate), header: proxyHeaderTimeout, idle: proxyIdleTimeout}
	if lim.conns <= 0 {
		lim.conns = DefaultProxyConnections
	}
	if lim.perSecond <= 0 {
		lim.perSecond = DefaultProxyRate
	}
	return &proxy{ctx: ctx, check: spec.AllowHost, neverDial: spec.NeverDial, dial: dial, resolve: resolve, conns: map[net.Conn]struct{}{},
		limits: lim, tokens: float64(lim.conns), refilled: time.Now()}
}

func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if why := p.admit(); why != "" {
			// Answered and closed at once: the command learns why, turnlog keeps
			// nothing of it.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			refuse(c, http.StatusServiceUnavailable, why)
			c.Close()
			continue
		}
		if !p.track(c) {
			p.release()
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.release()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// admit takes a connection's place under the caps, or says which cap it is past.
func (p *proxy) admit() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.tokens = min(float64(p.limits.conns), p.tokens+now.Sub(p.refilled).Seconds()*p.limits.perSecond)
	p.refilled = now
	why := ""
	switch {
	case p.open >= p.limits.conns:
		why = fmt.Sprintf("this command holds %d connections through the proxy, its most at once", p.open)
	case p.tokens < 1:
		why = fmt.Sprintf("this command opens connections faster than %g a second, its most", p.limits.perSecond)
	case proxiedTotal.Add(1) > ProxyTotal:
		proxiedTotal.Add(-1)
		why = fmt.Sprintf("the proxies of all commands serve %d connections, their most at once", ProxyTotal)
	}
	if why != "" {
		p.refused++
		return why
	}
	p.open++
	p.tokens--
	return ""
}

func (p *proxy) release() {
	proxiedTotal.Add(-1)
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
}

// close ends every connection (the command is gone) and returns what was decided,
// and how many connections were refused past the proxy's caps.
func (p *proxy) close(ln net.Listener) ([]HostDecision, int) {
	ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.decisions, p.refused
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *proxy) handle(c net.Conn) {
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(p.limits.header)) // a head sent a byte at a time is cut off
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	host, port := req.URL.Hostname(), req.URL.Port()
	switch {
	case req.Method == http.MethodConnect:
		host, port, err = net.SplitHostPort(req.Host)
		if err != nil {
			refuse(c, http.StatusBadRequest, "CONNECT needs host:port")
			return
		}
	case req.URL.Scheme != "http" || host == "":
		refuse(c, http.StatusBadRequest, "the proxy takes CONNECT or an absolute http:// URL")
		return
	case port == "":
		port = "80"
	}
	// The port as a number, written the one way: what is checked is what is dialled
	// (":08080" is port 8080 to a dialer).
	n, perr := strconv.Atoi(port)
	if perr != nil || n < 1 || n > 65535 {
		refuse(c, http.StatusBadRequest, "not a port: "+port)
		return
	}
	port = strconv.Itoa(n)
	d := HostDecision{Host: host, Port: port, Allowed: true}
	var addr net.IP
	if err := p.check(p.ctx, host); err != nil {
		d.Allowed, d.Reason = false, err.Error()
	} else if addr, err = p.address(host); err != nil {
		d.Allowed, d.Reason = false, err.Error()
	} else if p.reachesTurnlog(addr, port) {
		d.Allowed, d.Reason = false, fmt.Sprintf("%s:%s is turnlog's own (where it listens, or its database), which no command may reach", addr, port)
	}
	p.mu.Lock()
	p.decisions = append(p.decisions, d)
	p.mu.Unlock()
	if !d.Allowed {
		refuse(c, http.StatusForbidden, fmt.Sprintf("network to %s denied: %s", host, d.Reason))
		return
	}
	// The address checked is the address dialled: a name cannot resolve anew between.
	up, err := p.dial(p.ctx, "tcp", net.JoinHostPort(addr.String(), port))
	if err != nil {
		refuse(c, http.StatusBadGateway, err.Error())
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	act := &activity{idle: p.limits.idle}
	act.touch()
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { act.copy(up, c, br); up.Close() }()
		act.copy(c, up, up)
		return
	}
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true // one request per connection: the next may name another host
	up.SetWriteDeadline(time.Now().Add(p.limits.idle))
	if err := req.Write(up); err != nil {
		refuse(c, http.StatusBadGateway, err.Error())
		return
	}
	act.copy(c, up, up)
}

// activity is when a proxied connection last carried a byte, either way: one that
// carries nothing for idle is cut.
type activity struct {
	idle time.Duration
	last atomic.Int64 // unix nanoseconds
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

// copy copies from r (reading from src) to dst until either end closes, or until
// the connection idled: a read that waited idle ends it only if the other way was
// quiet too.
func (a *activity) copy(dst net.Conn, src net.Conn, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		src.SetReadDeadline(time.Unix(0, a.last.Load()).Add(a.idle))
		n, err := r.Read(buf)
		if n > 0 {
			a.touch()
			dst.SetWriteDeadline(time.Now().Add(a.idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, a.last.Load())) < a.idle {
			continue // the other way carried something meanwhile
		}
		if err != nil {
			return
		}
	}
}

// address resolves an allowed host to the address to dial. The proxy dials from
// turnlog's own network, so a name that resolves to a loopback, private, link-local
// or unspecified address (the host's own services, the local network, cloud metadata)
// is refused — unless the allowed host is that address written out.
func (p *proxy) address(host string) (net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip, nil // the rule named this very address
	}
	ips, err := p.resolve(p.ctx, host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %v", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	for _, ip := range ips {
		if internal(ip) {
			return nil, fmt.Errorf("%s resolves to %s, an address of the machine or its network; allow that address itself to reach it", host, ip)
		}
	}
	return ips[0], nil
}

// reachesTurnlog says whether a connection to ip:port would reach one of turnlog's
// own listeners (NeverDial): the same address, or a listener on every address and
// ip one of this machine's, or ip unspecified (the machine itself) and the listener
// local.
func (p *proxy) reachesTurnlog(ip net.IP, port string) bool {
	for _, l := range p.neverDial {
		host, lport, err := net.SplitHostPort(l)
		if n, perr := strconv.Atoi(lport); err != nil || perr != nil || strconv.Itoa(n) != port {
			continue
		}
		lip := net.ParseIP(host)
		if host == "" || host == "localhost" {
			lip = net.IPv4zero
			if host == "localhost" {
				lip = net.IPv4(127, 0, 0, 1)
			}
		}
		switch {
		case lip == nil:
			return true // a name: refuse the port on any address rather than guess
		case lip.Equal(ip):
			return true
		case lip.IsUnspecified() && local(ip):
			return true
		case ip.IsUnspecified() && local(lip):
			return true
		}
	}
	return false
}

// local says whether ip is an address of this machine.
func local(ip net.IP) bool {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

func internal(ip net.IP) bool {
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return true
	}
	for _, n := range internalNets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// internalNets are the other ranges that reach a provider's or a carrier's machines,
// not the internet: shared address space (a cloud's metadata service lives there),
// "this network", benchmarking, IETF protocol assignments, the reserved range, and
// NAT64, which can carry any of those.
var internalNets = func() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range []string{"100.64.0.0/10", "0.0.0.0/8", "198.18.0.0/15", "192.0.0.0/24", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48"} {
		_, n, _ := net.ParseCIDR(c)
		out = append(out, n)
	}
	return out
}()

func refuse(c net.Conn, status int, msg string) {
	body := "turnlog sandbox: " + msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}
