// Package cputime measures the CPU time (user + system) the process spends,
// as getrusage reports it, for benchmarks that compare CPU cost rather than
// wall time, and the process's peak resident set. Like the rest of devkit it
// is for tests and benchmarks only.
package cputime

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Used returns the CPU time the process (all its threads) has used so far.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSS returns the process's peak resident set size in bytes: the
// kernel's high-water mark of its own address space (VmHWM in
// /proc/self/status). getrusage's ru_maxrss is not that: Linux carries the
// high-water mark of the address space a process replaced at exec into it,
// and Go starts children with vfork, whose address space is the parent's,
// so a child of a large process would report the parent's peak. Where
// /proc is missing it falls back to ru_maxrss.
func PeakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if n, ok := statusKiB(b, "VmHWM:"); ok {
			return n << 10
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// statusKiB returns the value of a "Name:   1234 kB" line of a
// /proc/<pid>/status file.
func statusKiB(status []byte, name string) (int64, bool) {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(name))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Span is a CPU time measurement in progress.
type Span struct{ start time.Duration }

// Start begins a measurement.
func Start() Span { return Span{Used()} }

// Elapsed returns the CPU time used since Start.
func (s Span) Elapsed() time.Duration { return Used() - s.start }
