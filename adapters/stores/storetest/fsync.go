package storetest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// FsyncProbe measures one small write plus fsync on a benchmark's disk: the physical
// floor of a durable commit. A benchmark samples it all through its run, between its
// own operations, so the ratio it reports compares figures taken at the same moments
// of a host whose disk speed drifts.
type FsyncProbe struct {
	f       *os.File
	off     int64
	samples []time.Duration
}

// NewFsyncProbe makes a probe file in dir; it is closed when the benchmark ends.
func NewFsyncProbe(tb testing.TB, dir string) *FsyncProbe {
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return &FsyncProbe{f: f}
}

// Sample takes n measurements.
func (p *FsyncProbe) Sample(n int) {
	for i := 0; i < n; i++ {
		start := time.Now()
		p.f.WriteAt([]byte("x"), p.off%4096)
		p.f.Sync()
		p.samples = append(p.samples, time.Since(start))
		p.off++
	}
}

// Median is the median of every sample taken (it takes 50 if none was).
func (p *FsyncProbe) Median() time.Duration {
	if len(p.samples) == 0 {
		p.Sample(50)
	}
	s := slices.Clone(p.samples)
	slices.Sort(s)
	return s[len(s)/2]
}
