package turnlog_test

import (
	"io"
	"net"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"
)

// delayLine is a loopback TCP proxy to a database that delays every chunk by d each
// way, counted from the chunk's arrival — a delay line, as a network is: chunks in
// flight overlap, none waits for the one before it to be delivered.
type delayLine struct {
	ln     net.Listener
	target string
	d      time.Duration
	wg     sync.WaitGroup
}

// startDelayLine listens on loopback and forwards to target (host:port on loopback)
// with d each way; it stops with the test.
func startDelayLine(t testing.TB, target string, d time.Duration) *delayLine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayLine{ln: ln, target: target, d: d}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *delayLine) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(2)
		go p.pump(c, s)
		go p.pump(s, c)
	}
}

// chunk is what one read got, and when.
type chunk struct {
	data []byte
	at   time.Time
}

// pump copies from to dst, each chunk delivered d after it arrived; it closes both
// ends when either does.
func (p *delayLine) pump(src, dst net.Conn) {
	defer p.wg.Done()
	line := make(chan chunk, 1024)
	go func() {
		defer close(line)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				line <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range line {
		deliverAt(c.at.Add(p.d))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	src.Close()
	dst.Close()
	for range line { // let the reader end
	}
}

// deliverAt returns at t. Go's timers wake at about a millisecond's grain here, so
// the last stretch is waited out yielding the processor: a 0.5 ms delay is 0.5 ms,
// at the cost of CPU the benchmark's other work shares.
func deliverAt(t time.Time) {
	for {
		wait := time.Until(t)
		switch {
		case wait <= 0:
			return
		case wait > 2*time.Millisecond:
			time.Sleep(wait - 2*time.Millisecond)
		default:
			runtime.Gosched()
		}
	}
}

// through is dsn with its host:port replaced by the delay line's.
func (p *delayLine) through(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal("the PostgreSQL DSN is not a URL")
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// TestDelayLineDelaysEachWayAndOverlaps: a round trip through the line takes about
// twice its delay, and chunks sent back to back are not delayed one after another.
func TestDelayLineDelaysEachWayAndOverlaps(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	const d = 50 * time.Millisecond
	p := startDelayLine(t, echo.Addr().String(), d)
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1)
	start := time.Now()
	const chunks = 10
	for i := range chunks { // ten chunks at once: they arrive back together
		c.Write([]byte{byte(i)})
		time.Sleep(time.Millisecond)
	}
	for range chunks {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	// One delay after another would take at least chunks × d each way.
	if took < 2*d || took >= chunks*d {
		t.Fatalf("%d chunks through a %v line each way took %v: want about %v, not one delay after another", chunks, d, took, 2*d)
	}
}
