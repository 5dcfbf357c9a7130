package main

import (
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress reports how far a long operation got.
type progress interface {
	Add(n int)
	Finish()
}

type quietProgress struct{}

func (quietProgress) Add(int) {}
func (quietProgress) Finish() {}

type barProgress struct{ bar *progressbar.ProgressBar }

func (b barProgress) Add(n int) { _ = b.bar.Add(n) }
func (b barProgress) Finish()   { _ = b.bar.Finish() }

// progress returns a progress bar on stderr for total steps, or a quiet one
// when there is a single step or stdout or stderr is not a terminal (a pipe,
// a file, a test, JSON for a script).
func (a *app) progress(total int, what string) progress {
	if total < 2 || !a.terminal(a.stdout) || !a.terminal(a.stderr) {
		return quietProgress{}
	}
	return barProgress{progressbar.NewOptions(total,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)}
}
