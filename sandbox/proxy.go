package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
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

	mu        sync.Mutex
	decisions []HostDecision
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
}

const proxyDialTimeout = 15 * time.Second

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
	return &proxy{ctx: ctx, check: spec.AllowHost, neverDial: spec.NeverDial, dial: dial, resolve: resolve, conns: map[net.Conn]struct{}{}}
}

func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// close ends every connection (the command is gone) and returns what was decided.
func (p *proxy) close(ln net.Listener) []HostDecision {
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
	return p.decisions
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
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
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
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, br); up.Close() }()
		io.Copy(c, up)
		return
	}
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true // one request per connection: the next may name another host
	if err := req.Write(up); err != nil {
		refuse(c, http.StatusBadGateway, err.Error())
		return
	}
	io.Copy(c, up)
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
