package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// deadlines gives every request of h a body deadline — the body must arrive within
// l.BodyTimeout of the head, after which reading it fails and the connection's
// deadline is lifted again, so a stream or a long wait is not cut — and every
// write of its answer a deadline of l.WriteTimeout from when it starts.
func deadlines(h http.Handler, l ConnLimits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if c, ok := r.Context().Value(connKey{}).(*cappedConn); ok && !c.l.begin(c) {
			// Closed to make room as its request arrived: nothing of it runs.
			w.Header().Set("Connection", "close")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"code":"overloaded","message":"turnlog closed this connection to make room for another: send the request again"}}`)
			return
		}
		if l.BodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, w: w}
		}
		if l.WriteTimeout > 0 {
			w = &deadlineWriter{ResponseWriter: w, rc: rc, timeout: l.WriteTimeout}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body has been read whole (a stream
// or a long wait then lives on), and says so when the deadline cut it. A body that
// ended any other way (cut off, too large) keeps its deadline past, and the
// connection ends with the answer: nothing is left to wait for what the client
// still sends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	w    http.ResponseWriter
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			_ = b.rc.SetReadDeadline(time.Time{})
			return n, err
		}
		_ = b.rc.SetReadDeadline(time.Now())
		b.w.Header().Set("Connection", "close")
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = errBodyTimeout
		}
	}
	return n, err
}

// deadlineWriter sets a write deadline before each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) WriteHeader(code int) { w.ResponseWriter.WriteHeader(code) }

func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	_ = w.rc.Flush()
}

func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.rc.Hijack()
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
