package cputime

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

func TestStatusKiB(t *testing.T) {
	status := "Name:\tx\nVmPeak:\t  200 kB\nVmHWM:\t   1234 kB\nVmRSS:\t  1000 kB\nThreads:\t5\n"
	for _, c := range []struct {
		name   string
		status string
		want   int64
		ok     bool
	}{
		{"VmHWM:", status, 1234, true},
		{"VmRSS:", status, 1000, true},
		{"VmSwap:", status, 0, false},             // absent
		{"Threads:", status, 0, false},            // not a size
		{"VmHWM:", "VmHWM:\tlots kB\n", 0, false}, // not a number
	} {
		got, ok := statusKiB([]byte(c.status), c.name)
		if got != c.want || ok != c.ok {
			t.Errorf("statusKiB(%q) = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// childEnv makes the test binary print its PeakRSS and exit (see
// TestPeakRSSIsTheProcesss).
const childEnv = "CPUTIME_TEST_PEAK_CHILD"

// TestPeakRSSIsTheProcesss checks that a child started by a process with a
// large resident set reports its own peak, not its parent's: the parent
// holds 256 MiB while the child, which allocates nothing, reports.
func TestPeakRSSIsTheProcesss(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	if os.Getenv(childEnv) != "" {
		os.Stdout.WriteString(strconv.FormatInt(PeakRSS(), 10))
		os.Exit(0)
	}
	big := make([]byte, 256<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	if p := PeakRSS(); p < int64(len(big)) {
		t.Fatalf("parent PeakRSS %d, want at least the %d bytes it touched", p, len(big))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSSIsTheProcesss$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.Output()
	runtime.KeepAlive(big)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.ParseInt(string(out), 10, 64)
	if err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	if child <= 0 || child >= int64(len(big))/2 {
		t.Errorf("child PeakRSS %d MiB, want its own (a few MiB), not the parent's %d MiB", child>>20, len(big)>>20)
	}
}
