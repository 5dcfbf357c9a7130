// Package cputime measures the CPU time (user + system) the process spends,
// as getrusage reports it, for benchmarks that compare CPU cost rather than
// wall time. Like the rest of devkit it is for tests and benchmarks only.
package cputime

import (
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

// PeakRSS returns the process's peak resident set size in bytes (the
// kernel's high-water mark, VmHWM).
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// Span is a CPU time measurement in progress.
type Span struct{ start time.Duration }

// Start begins a measurement.
func Start() Span { return Span{Used()} }

// Elapsed returns the CPU time used since Start.
func (s Span) Elapsed() time.Duration { return Used() - s.start }
