package systemtest

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodesShareStreamsAndSignIns: with two real nodes on one database, a client of
// node B follows, live, the turn node A runs — B's stream shows the tool call while
// the tool is still held, then its result and the commit — and an inspector sign-in
// made on node A opens node B's pages.
func TestNodesShareStreamsAndSignIns(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	shop := newShopServer(t, func(ref string, _ int) time.Duration {
		if ref == "held-2" {
			once.Do(func() { close(arrived) })
			<-release
		}
		return 0
	})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	c, _ := shopCluster(t, shop.URL, 2*time.Second)
	a, b := c.start(0), c.start(1)
	client := &http.Client{Timeout: 30 * time.Second}
	status, sess := apiCall{"POST", "/v1/sessions", "", map[string]any{"app": "shop"}}.send(client, a.url)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, sess)
	}
	session := sess["id"].(string)
	status, bg := apiCall{"POST", "/v1/sessions/" + session + "/turns", "", map[string]any{"input": "check held-2", "background": true}}.send(client, a.url)
	if status != http.StatusAccepted {
		t.Fatalf("background turn on node a: %d %v", status, bg)
	}
	turn := bg["turn_id"].(string)

	req, _ := http.NewRequest("GET", b.url+"/v1/sessions/"+session+"/turns/"+turn+"/stream", nil)
	req.Header.Set("Authorization", "Bearer key-alice")
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("node b's stream: %d", res.StatusCode)
	}
	names := make(chan string, 64)
	go func() {
		defer close(names)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				names <- name
			}
		}
	}()
	until := func(want string) []string {
		t.Helper()
		var seen []string
		timeout := time.After(30 * time.Second)
		for {
			select {
			case name, ok := <-names:
				if !ok {
					t.Fatalf("node b's stream ended before %s: %v\n%s", want, seen, c.logs())
				}
				if seen = append(seen, name); name == want {
					return seen
				}
			case <-timeout:
				t.Fatalf("node b's stream never showed %s: %v\n%s", want, seen, c.logs())
			}
		}
	}
	<-arrived
	until("tool_call") // live: the tool is still held on node a
	released = true
	close(release)
	if rest := until("turn_committed"); !contains(rest, "tool_result") {
		t.Errorf("node b's stream after the release: %v", rest)
	}

	noRedirects := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signin, err := noRedirects.PostForm(a.url+"/ui/signin", url.Values{"key": {"key-alice"}, "next": {"/ui/"}})
	if err != nil {
		t.Fatal(err)
	}
	signin.Body.Close()
	cookies := signin.Cookies()
	if signin.StatusCode != http.StatusSeeOther || len(cookies) == 0 {
		t.Fatalf("sign in on node a: %d %v", signin.StatusCode, cookies)
	}
	page := func(cookies []*http.Cookie) (int, string) {
		req, _ := http.NewRequest("GET", b.url+"/ui/", nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body strings.Builder
		bufio.NewReader(res.Body).WriteTo(&body)
		return res.StatusCode, body.String()
	}
	if status, body := page(cookies); status != http.StatusOK || !strings.Contains(body, session) {
		t.Fatalf("node b's pages with node a's sign-in: %d\n%.500s", status, body)
	}
	forged := []*http.Cookie{{Name: cookies[0].Name, Value: "not-a-sign-in"}}
	if status, _ := page(forged); status != http.StatusSeeOther {
		t.Fatalf("node b's pages with a made-up cookie: %d", status)
	}
}
