package systemtest

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDiskEnv makes this test binary, started in a user and mount namespace of its
// own, mount a tmpfs of SMALL_DISK_SIZE at SMALL_DISK_DIR before it serves, and take
// disk commands on fd 3, answering on fd 4 (see diskCommands).
const smallDiskEnv = "TURNLOG_SMALL_DISK"

func setUpSmallDisk() {
	dir := os.Getenv("SMALL_DISK_DIR")
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "small disk: make mounts private:", err)
		os.Exit(2)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+os.Getenv("SMALL_DISK_SIZE")); err != nil {
		fmt.Fprintln(os.Stderr, "small disk: mount tmpfs:", err)
		os.Exit(2)
	}
	go diskCommands(os.NewFile(3, "commands"), os.NewFile(4, "answers"), dir)
}

// diskCommands does what the test asks of the disk: "fill" writes a file until the
// disk refuses, "free" removes it, "check" runs PRAGMA integrity_check on the
// database. Each answer is one line.
func diskCommands(in io.Reader, out io.Writer, dir string) {
	filler := filepath.Join(dir, "filler")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "fill":
			f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			chunk, n := make([]byte, 4096), 0
			for err == nil {
				var k int
				k, err = f.Write(chunk)
				n += k
			}
			f.Close()
			fmt.Fprintf(out, "full after %d bytes: %v\n", n, err)
		case "free":
			fmt.Fprintf(out, "freed: %v\n", os.Remove(filler))
		case "check":
			conn, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "turnlog.db")+"?mode=ro&_pragma=busy_timeout(5000)")
			verdict := "unopened"
			if err == nil {
				err = conn.QueryRow(`PRAGMA integrity_check`).Scan(&verdict)
				conn.Close()
			}
			fmt.Fprintf(out, "integrity %s %v\n", verdict, err)
		}
	}
}

// smallDisk is a serving turnlog whose database lies on a small tmpfs.
type smallDisk struct {
	cmd     *exec.Cmd
	base    string
	ask     io.Writer
	answers *bufio.Scanner
}

func (d smallDisk) do(t *testing.T, command string) string {
	t.Helper()
	fmt.Fprintln(d.ask, command)
	if !d.answers.Scan() {
		t.Fatalf("disk command %s: no answer", command)
	}
	return d.answers.Text()
}

func serveOnSmallDisk(t *testing.T, b crashBundle, size string) smallDisk {
	t.Helper()
	dir := filepath.Join(b.dir, "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "serve", "--dev", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "turnlog.db"), "--config", b.cfg)
	cmd.Env = append(os.Environ(), childEnv+"=1", "CRASH_DIR="+b.dir, smallDiskEnv+"=1", "SMALL_DISK_DIR="+dir, "SMALL_DISK_SIZE="+size)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{cmdR, ansW}
	base := startServing(t, cmd)
	cmdR.Close()
	ansW.Close()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait(); cmdW.Close(); ansR.Close() })
	return smallDisk{cmd: cmd, base: base, ask: cmdW, answers: bufio.NewScanner(ansR)}
}

// TestFullDisk serves from a database on a small tmpfs (in a user and mount
// namespace of the test's own) and fills the disk while a turn's tool runs. Writes
// are refused with 507 storage_full and write nothing; the turn whose tool result
// could not be written is recorded as failed as soon as there is space again; reads
// go on all along; turns succeed again; the database passes integrity_check.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	hold := filepath.Join(b.dir, "hold-counted_write")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := serveOnSmallDisk(t, b, "8m")
	idOf := regexp.MustCompile(`"id":"([^"]+)"`)
	session := idOf.FindStringSubmatch(callServer(t, "POST", d.base+"/v1/sessions", `{"app":"crash"}`))[1]
	other := idOf.FindStringSubmatch(callServer(t, "POST", d.base+"/v1/sessions", `{"app":"crash"}`))[1]
	if r := callServer(t, "POST", d.base+"/v1/sessions/"+session+"/turns", `{"input":"hello"}`); !strings.Contains(r, `"status":"completed"`) {
		t.Fatalf("first turn: %s", r)
	}
	accepted := callServer(t, "POST", d.base+"/v1/sessions/"+session+"/turns", `{"input":"write it","background":true}`)
	loc := regexp.MustCompile(`"location":"([^"]+)"`).FindStringSubmatch(accepted)
	if loc == nil {
		t.Fatalf("background: %s", accepted)
	}
	for deadline := time.Now().Add(30 * time.Second); len(b.count("counted_write")) == 0; { // the tool runs, held
		if time.Now().After(deadline) {
			t.Fatal("the tool never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, eventsBefore := request(t, "GET", d.base+"/v1/sessions/"+other+"/events", "")
	if a := d.do(t, "fill"); !strings.Contains(a, "no space left on device") {
		t.Fatalf("fill: %s", a)
	}

	// New work is refused, typed, and writes nothing.
	refused := 0
	for i := 0; i < 20; i++ {
		code, body := request(t, "POST", d.base+"/v1/sessions/"+other+"/turns", `{"input":"hello"}`)
		if code == http.StatusInsufficientStorage && strings.Contains(body, `"code":"storage_full"`) {
			refused++
			break
		}
		if code != http.StatusOK {
			t.Fatalf("a turn on a full disk: %d %s", code, body)
		}
	}
	if refused == 0 {
		t.Fatal("20 turns ran on a full disk: the WAL never had to grow")
	}
	// The held tool ends; its result cannot be written; the turn breaks.
	os.Remove(hold)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(callServer(t, "GET", d.base+"/metrics", ""), "turnlog_turns_broken_total 1"); {
		if time.Now().After(deadline) {
			t.Fatal("the turn whose result could not be written never broke")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Reads go on: the session, its turns, its events.
	for _, path := range []string{"/v1/sessions/" + session, "/v1/sessions/" + session + "/turns", "/v1/sessions/" + session + "/history", "/readyz"} {
		if code, body := request(t, "GET", d.base+path, ""); code != http.StatusOK {
			t.Fatalf("GET %s on a full disk: %d %s", path, code, body)
		}
	}
	if code, body := request(t, "POST", d.base+"/v1/sessions/"+session+"/turns", `{"input":"hello"}`); code != http.StatusConflict && code != http.StatusInsufficientStorage {
		t.Fatalf("a turn on the broken turn's session: %d %s", code, body)
	}

	if a := d.do(t, "free"); a != "freed: <nil>" {
		t.Fatalf("free: %s", a)
	}
	code, turn := request(t, "GET", d.base+loc[1]+"?wait=30s", "")
	if code != http.StatusOK || !strings.Contains(turn, `"status":"failed"`) || !strings.Contains(turn, `"code":"storage_full"`) {
		t.Fatalf("the broken turn once there is space: %d %s", code, turn)
	}
	if n := len(b.count("counted_write")); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	_, evs := request(t, "GET", d.base+"/v1/sessions/"+session+"/events", "")
	if strings.Contains(evs, `"type":"ToolResulted"`) || strings.Count(evs, `"type":"TurnFailed"`) != 1 {
		t.Fatalf("the broken turn's events: %s", evs)
	}
	if _, after := request(t, "GET", d.base+"/v1/sessions/"+other+"/events", ""); after != eventsBefore {
		t.Fatalf("refused turns wrote to the log:\nbefore %s\nafter %s", eventsBefore, after)
	}
	for _, s := range []string{session, other} {
		if r := callServer(t, "POST", d.base+"/v1/sessions/"+s+"/turns", `{"input":"hello"}`); !strings.Contains(r, `"status":"completed"`) {
			t.Fatalf("a turn once there is space: %s", r)
		}
	}
	if a := d.do(t, "check"); a != "integrity ok <nil>" {
		t.Fatalf("integrity: %s", a)
	}
}
