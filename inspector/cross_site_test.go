package inspector_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestUploadsAreCappedBeforeTheyAreRead: a replay upload far over the cap is refused
// once the cap is read, not after the server has read (or spooled) all of it.
func TestUploadsAreCappedBeforeTheyAreRead(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	w := b.browser()
	w.signIn("k-alice")
	csrf := csrfOf(t, w.do("GET", "/ui/replay", nil).body)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", csrf)
	fw, _ := mw.CreateFormFile("fixture", "big.events.jsonl")
	fw.Write(bytes.Repeat([]byte("x"), 40<<20))
	mw.Close()
	var read atomic.Int64
	req, _ := http.NewRequest("POST", b.srv.URL+"/ui/replay", countingReader{&body, &read})
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := w.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// (What the client wrote includes what sat in socket buffers when the server stopped reading.)
	if res.StatusCode != http.StatusBadRequest || read.Load() > 16<<20 {
		t.Fatalf("the server answered %d after reading %d MiB of a replay upload (cap 4 MiB)", res.StatusCode, read.Load()>>20)
	}
}

// TestDevRefusesOtherSitesPosts: under --dev, which needs no cookie, a page of
// another site cannot post to the inspector, not even with a token it computed as a
// fixed one would be.
func TestDevRefusesOtherSitesPosts(t *testing.T) {
	t.Parallel()
	b := setup(t, "", true)
	ctx := context.Background()
	s, err := b.tl.Engine.CreateSession(ctx, "demo", "dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("turnlog-dev-csrf" + ""))
	token := hex.EncodeToString(sum[:16])
	form := url.Values{"csrf": {token}, "input": {"hello from evil.example"}}
	res := b.postFrom("/ui/sessions/"+s.ID+"/turns", form, "https://evil.example", "cross-site")
	turns, _ := b.tl.Store.Turns(ctx, s.ID)
	if res.StatusCode != http.StatusForbidden || len(turns) != 0 {
		t.Fatalf("a cross-site post with the computed dev token ran: %d, %d turns", res.StatusCode, len(turns))
	}
}

// TestSignInFromAnotherSiteIsRefused: a page of another site cannot sign a browser
// in as someone else (login CSRF).
func TestSignInFromAnotherSiteIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	res := b.postFrom("/ui/signin", url.Values{"key": {"k-bob"}}, "https://evil.example", "cross-site")
	if res.StatusCode != http.StatusForbidden || res.Header.Get("Set-Cookie") != "" {
		t.Fatalf("a cross-site sign-in post set a cookie: %s", res.Header.Get("Set-Cookie"))
	}
}

// postFrom posts a form as a page of origin would, with the Sec-Fetch-Site a browser
// sends ("": none), from a browser of its own; the answer's body is read and closed.
func (b bundle) postFrom(path string, form url.Values, origin, site string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	res, err := b.browser().c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}
