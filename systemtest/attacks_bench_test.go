package systemtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) process pid has used.
func processCPU(tb testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses: utime is the
	// 14th field of the line, stime the 15th, in clock ticks (100 a second here).
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkTurnsUnderAttack runs 50 real clients' turns on a real turnlog (the
// binary, on a SQLite file, with API keys) with no attack, then under each attack of
// a hostile client — 8 clients sending 1 MB bodies nested as deep as they go, 5,000
// slow-body connections, 5,000 idle connections — in one run, and reports turns/s
// and p99 under each as ratios to the run without.
func BenchmarkTurnsUnderAttack(b *testing.B) {
	const clients, turns = 50, 10
	base, cmd := serveWithKey(b)
	addr := strings.TrimPrefix(base, "http://")
	runClients(base, clients, turns) // warm
	measure := func(name string) clientRun {
		r := runClients(base, clients, turns*b.N)
		if len(r.failed) > 0 {
			b.Fatalf("%s: %v", name, r.failed[:min(3, len(r.failed))])
		}
		return r
	}
	b.ResetTimer()
	quiet := measure("without an attack")
	b.ReportMetric(quiet.perSec, "turns/s")
	b.ReportMetric(float64(quiet.p99.Microseconds())/1000, "p99-ms")
	report := func(name string, r clientRun) {
		b.ReportMetric(r.perSec/quiet.perSec, name+"-turns/s-ratio")
		b.ReportMetric(float64(r.p99)/float64(quiet.p99), name+"-p99-ratio")
	}

	ctx, stop := context.WithCancel(context.Background())
	cpuBefore, began := processCPU(b, cmd.Process.Pid), time.Now()
	sent, wrong, flooding := nestingFlood(ctx, addr, 8)
	report("nesting", measure("under nesting attacks"))
	stop()
	flooding.Wait()
	if wrong.Load() > 0 {
		b.Fatalf("%d of %d nesting attacks were not answered 400", wrong.Load(), sent.Load())
	}
	// What one attack cost the server, beside the turns it ran meanwhile: the
	// attackers share this machine's cores with it and with the clients, so the
	// ratios above say as much about the machine as about turnlog.
	b.ReportMetric(float64(sent.Load())/time.Since(began).Seconds(), "nesting-attacks/s")
	cpu := processCPU(b, cmd.Process.Pid) - cpuBefore
	b.ReportMetric(cpu.Seconds()*1000/float64(sent.Load()+int64(clients*turns*b.N)), "nesting-server-cpu-ms/request")

	slow := holdConnections(addr, 5000, 0, 20)
	time.Sleep(time.Second) // the last slow heads are read: they hold their requests open
	report("slow-body", measure("under slow bodies"))
	slow.close()

	idle := holdConnections(addr, 0, 5000, 20)
	report("idle", measure("under idle connections"))
	idle.close()
}
