package tracetally

import (
	"bytes"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

// handOff hands a value over an unbuffered channel to a goroutine started
// with receiveOne: whichever of the two comes to the channel first parks,
// so one of them waits on it, at its own function.
func handOff(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	c, done := make(chan int), make(chan struct{})
	go receiveOne(c, done)
	sendOne(c)
	<-done
	trace.Stop()
	return buf.Bytes()
}

//go:noinline
func receiveOne(c chan int, done chan struct{}) {
	<-c
	close(done)
}

//go:noinline
func sendOne(c chan int) { c <- 1 }

func TestRead(t *testing.T) {
	tally, err := Read(bytes.NewReader(handOff(t)))
	if err != nil {
		t.Fatal(err)
	}
	var levels time.Duration
	for _, d := range tally.Running {
		levels += d
	}
	if tally.Span <= 0 || levels != tally.Span {
		t.Fatalf("span %s, the running levels add up to %s", tally.Span, levels)
	}
	recv := "github.com/daybook-dev/daybook/shared/devkit/tracetally.receiveOne"
	var started, waited bool
	for _, g := range tally.Groups {
		if g.Start == recv && g.Goroutines == 1 {
			started = true
		}
		for _, w := range g.Waits {
			if strings.HasPrefix(w.Reason, "chan") && (w.Where == recv || strings.HasSuffix(w.Where, ".sendOne")) && w.Count > 0 && w.Total > 0 {
				waited = true
			}
		}
	}
	if !started || !waited {
		var out strings.Builder
		_ = tally.Write(&out, 20, 5)
		t.Fatalf("want a group started at receiveOne and a channel wait at receiveOne or sendOne (found %v, %v):\n%s", started, waited, out.String())
	}
	var out strings.Builder
	if err := tally.Write(&out, 20, 5); err != nil || !strings.Contains(out.String(), recv+" (1 goroutines): ran ") {
		t.Fatalf("Write: %v\n%s", err, out.String())
	}
}

func TestReadRejectsWhatIsNotATrace(t *testing.T) {
	if _, err := Read(strings.NewReader("not a trace")); err == nil || !strings.HasPrefix(err.Error(), "trace: ") {
		t.Fatalf("error %v, want one that names the trace", err)
	}
}
