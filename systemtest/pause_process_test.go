package systemtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAPausedNodeCannotAppend: node A runs a turn whose lookup (an idempotent tool)
// is held at the tools' server; A is SIGSTOPped past its lease; node B takes the
// session over and recovers the turn by the replay rule, sending the lookup again,
// which is held too. Then A's lookup answers and A is SIGCONTinued: its appends are
// refused by the lease's fencing token (the log is still where B found it, so only
// the token stands between A and the log). B's lookup answers after, and B ends the
// turn: the log holds B's result only, one terminal event, and A, alive, serves the
// session's next turn.
func TestAPausedNodeCannotAppend(t *testing.T) {
	t.Parallel()
	arrived := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	release := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	shop := newShopServer(t, func(ref string, nth int) time.Duration {
		if ref == "held-1" && nth <= 2 {
			close(arrived[nth])
			<-release[nth]
		}
		return 0
	})
	defer func() { // let whatever is still held go
		for _, ch := range release[1:] {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}()
	wait := func(ch chan struct{}, what string, c *cluster) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never came\n%s", what, c.logs())
		}
	}
	const lease = time.Second
	c, dsn := shopCluster(t, shop.URL, lease)
	a, b := c.start(0), c.start(1)
	client := &http.Client{Timeout: 30 * time.Second}
	status, sess := apiCall{"POST", "/v1/sessions", "", map[string]any{"app": "shop"}}.send(client, a.url)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, sess)
	}
	path := "/v1/sessions/" + sess["id"].(string) + "/turns"
	status, bg := apiCall{"POST", path, "", map[string]any{"input": "check held-1", "background": true}}.send(client, a.url)
	if status != http.StatusAccepted {
		t.Fatalf("background turn: %d %v", status, bg)
	}
	turn := bg["turn_id"].(string)
	wait(arrived[1], "node a's lookup", c)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	stopped := true
	defer func() {
		if stopped {
			a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	// B looks for turns whose lease expired every lease period: it recovers this one
	// and sends the lookup again.
	wait(arrived[2], "node b's lookup", c)
	t.Logf("node b took the turn over %s after the pause", time.Since(paused).Round(time.Millisecond))
	logged := len(readFile(a.log))
	close(release[1]) // A's lookup answers; A cannot hear it yet
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped, resumed := false, time.Now()
	// A's run learns its lease is lost (its renewal, or its append, is refused) and
	// ends: its log says so. (Were A's appends let through, A would end the turn.)
	aDone := func() bool {
		for _, line := range strings.Split(readFile(a.log)[logged:], "\n") {
			if strings.Contains(line, turn) && !strings.Contains(line, `"message":"request"`) {
				return true // the engine's line about its run of the turn, not a request's
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); !aDone(); {
		if time.Now().After(deadline) {
			t.Fatalf("node a never ended its run of the turn\n%s", c.logs())
		}
		time.Sleep(50 * time.Millisecond) // A wakes up and runs on
	}
	t.Logf("node a ended its run %s after SIGCONT", time.Since(resumed).Round(time.Millisecond))
	for _, line := range strings.Split(readFile(a.log)[logged:], "\n") {
		if strings.Contains(line, turn) && !strings.Contains(line, `"message":"request"`) {
			t.Logf("node a: %s", line)
		}
	}
	close(release[2]) // B's lookup answers
	var ended map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, ended = apiCall{"GET", path + "/" + turn, "", nil}.send(client, b.url)
		if ended["status"] != "running" && ended["status"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node b never ended the turn: %v\n%s", ended, c.logs())
		}
		time.Sleep(50 * time.Millisecond) // B's run records the lookup, then the answer
	}
	if ended["status"] != "completed" {
		t.Fatalf("the turn: %v\n%s", ended, c.logs())
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT type, data::text FROM events WHERE turn_id = $1 ORDER BY seq`, turn)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for rows.Next() {
		var ty, data string
		rows.Scan(&ty, &data)
		types = append(types, ty)
		if ty == "ToolResulted" {
			var res struct{ Output string }
			json.Unmarshal([]byte(data), &res)
			if !strings.Contains(res.Output, `"nth": 2`) {
				t.Errorf("the recorded lookup is not node b's: %s", res.Output)
			}
		}
	}
	rows.Close()
	results, terminal := 0, 0
	for _, ty := range types {
		switch ty {
		case "ToolResulted":
			results++
		case "TurnCommitted", "TurnFailed", "TurnCanceled":
			terminal++
		}
	}
	if results != 1 || terminal != 1 || types[len(types)-1] != "TurnCommitted" {
		t.Errorf("the turn's events: %v", types)
	}
	if status, _ := (apiCall{"GET", "/readyz", "", nil}).send(client, a.url); status != http.StatusOK {
		t.Fatalf("node a after SIGCONT: /readyz %d", status)
	}
	if status, next := (apiCall{"POST", path, "", map[string]any{"input": "pay after-1"}}).send(client, a.url); status != http.StatusOK || next["status"] != "completed" {
		t.Fatalf("node a's next turn: %d %v\n%s", status, next, c.logs())
	}
	if t.Failed() {
		t.Logf("%s", c.logs())
	}
}
