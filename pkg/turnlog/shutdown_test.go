package turnlog_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestServeEndsTheInspectorsStreams: an inspector page left open does not hold the
// server's stop for its grace period: its live stream ends, and Serve returns.
func TestServeEndsTheInspectorsStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: []byte(toolConfig(`{function: ping}`)), Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	s, _ := tl.Engine.CreateSession(ctx, "a", "alice", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- tl.Serve(serveCtx, ln, turnlog.ServeOptions{Keys: map[string]string{"k": "alice"}, ShutdownGrace: time.Minute})
	}()
	base := "http://" + ln.Addr().String()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(base+"/ui/signin", url.Values{"key": {"k"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	live, err := c.Get(base + "/ui/sessions/" + s.ID + "/live?after=0")
	if err != nil || live.StatusCode != http.StatusOK {
		t.Fatalf("the live stream: %v %v", live, err)
	}
	defer live.Body.Close()
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second): // half the grace period: the stream held it
		t.Fatal("Serve did not return while an inspector page was open")
	}
	if rest, err := io.ReadAll(live.Body); err != nil || !strings.Contains(string(rest), "event: step") {
		t.Fatalf("the stream ended with %v after %q", err, rest)
	}
}
