package httpapi

import (
	"net"
	"testing"
)

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// TestAnIPv6ClientIsItsSlash64: the per-address cap counts an IPv6 client by its
// /64, which one host usually holds whole; IPv4 (and IPv4-mapped) addresses by
// themselves.
func TestAnIPv6ClientIsItsSlash64(t *testing.T) {
	at := func(s string) addrConn {
		a, err := net.ResolveTCPAddr("tcp", s)
		if err != nil {
			t.Fatal(err)
		}
		return addrConn{remote: a}
	}
	if a, b := remoteAddr(at("[2001:db8:1:2::1]:5")), remoteAddr(at("[2001:db8:1:2:ffff::9]:6")); a != b {
		t.Errorf("one /64 counts as %v and %v", a, b)
	}
	if a, b := remoteAddr(at("[2001:db8:1:2::1]:5")), remoteAddr(at("[2001:db8:1:3::1]:5")); a == b {
		t.Errorf("two /64s count as one: %v", a)
	}
	if a, b := remoteAddr(at("127.0.0.2:5")), remoteAddr(at("127.0.0.3:5")); a == b {
		t.Errorf("two IPv4 addresses count as one: %v", a)
	}
	if a, b := remoteAddr(at("[::ffff:127.0.0.2]:5")), remoteAddr(at("127.0.0.2:9")); a != b {
		t.Errorf("an IPv4-mapped address counts apart from its IPv4 one: %v %v", a, b)
	}
}
