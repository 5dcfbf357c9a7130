//go:build !noduckdb

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/cputime"
	"github.com/daybook-dev/daybook/shared/devkit/pgreplay"
)

// On this machine the PostgreSQL backend shares the cores with the export
// and is the bottleneck: the one-core export already runs at the raw
// read's wall time. So BenchmarkExportPostgres also records one export
// session of the day and one raw read (pgreplay: the server's bytes, per
// connection, released as the client's byte count reaches theirs) and
// measures the exports and the raw read again from the recording served
// from memory, where the client is the bottleneck. Both the exports and
// the replayed raw read run in child processes: the replayer runs in the
// test process, whose CPU time would otherwise count it.

// replayRow is a day's figures from its recorded source: the raw read (in
// a child at GOMAXPROCS 1), DuckDB's encode (from the real-server row),
// the export at GOMAXPROCS 1 and 2, and at GOMAXPROCS 2 with the read's
// decode-ahead goroutine forced on and off, aheadPairs runs of each.
type replayRow struct {
	rows         int
	raw, rawWall time.Duration
	duck         time.Duration
	one, two     benchResult
	on, off      []benchResult
	recorded     string        // what the recordings hold
	serve        time.Duration // the test process's CPU while the GOMAXPROCS 2 export ran: the replayer's, and starting the child
}

// aheadPairs is how many exports with decode-ahead on and off, taken in
// turns, replayDay compares.
const aheadPairs = 3

// recordedDay is one export session of a day (the child at GOMAXPROCS 1)
// and one raw read of it (the child's RawCopy), recorded, with what the
// child reported of each.
type recordedDay struct {
	export, raw       *pgreplay.Recording
	exportRes, rawRes benchResult
}

// recordDay records the export of acct's benchDay and its raw read
// through a pgreplay.Recorder in front of dsn.
func recordDay(tb testing.TB, child, dsn, acct string) recordedDay {
	var d recordedDay
	d.export = recordSession(tb, dsn, func(dsn string) {
		d.exportRes = runExportChild(tb, child, benchChild{DSN: dsn, Account: acct, Day: benchDay.String(), Label: "recording"}, 1)
	})
	d.raw = recordSession(tb, dsn, func(dsn string) {
		d.rawRes = runExportChild(tb, child, benchChild{DSN: dsn, RawCopy: rawCopy(acct)}, 1)
	})
	return d
}

// describe says what a recording holds.
func describe(r *pgreplay.Recording) string {
	var client, server int64
	chunks := 0
	for i := range r.Conns {
		client, server, chunks = client+r.Conns[i].ClientBytes, server+r.Conns[i].ServerBytes(), chunks+len(r.Conns[i].Chunks)
	}
	return fmt.Sprintf("%d connection(s), %d client bytes, %.1f MB from the server in %d chunks", len(r.Conns), client, float64(server)/1e6, chunks)
}

// recordSession records what run does through a proxy's DSN.
func recordSession(tb testing.TB, dsn string, run func(dsn string)) *pgreplay.Recording {
	r := pgreplay.NewRecorder(tb, dsn)
	run(r.DSN)
	rec, err := r.Stop()
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

// replayRun runs the child c from a replay of rec at GOMAXPROCS procs.
func replayRun(tb testing.TB, child string, rec *pgreplay.Recording, c benchChild, procs int) benchResult {
	rp := pgreplay.NewReplayer(tb, rec)
	c.DSN = rp.DSN
	res := runExportChild(tb, child, c, procs)
	if err := rp.Close(); err != nil {
		tb.Fatalf("replay of %+v at GOMAXPROCS %d: %v", c, procs, err)
	}
	return res
}

// replayDay records acct's benchDay from dsn and measures it from the
// replay; real is the day's row from the real server, whose rows and
// file bytes every export must match.
func replayDay(tb testing.TB, child, dsn, acct string, real benchRow) replayRow {
	d := recordDay(tb, child, dsn, acct)
	r := replayRow{rows: real.rows, duck: real.duck, recorded: "export " + describe(d.export) + "; raw read " + describe(d.raw)}
	spec := benchChild{Account: acct, Day: benchDay.String(), Label: "replay"}
	var raws []benchResult
	for range benchRuns {
		raw := replayRun(tb, child, d.raw, benchChild{RawCopy: rawCopy(acct)}, 1)
		if raw.Bytes != d.rawRes.Bytes {
			tb.Fatalf("the raw read from the replay copied %d bytes, from the server %d", raw.Bytes, d.rawRes.Bytes)
		}
		raws = append(raws, raw)
	}
	raw := medianResult(tb, raws)
	r.raw, r.rawWall = raw.CPU, raw.Wall
	r.one, r.two = onesAndTwos(tb, func(procs int) benchResult {
		if procs == 1 {
			return replayRun(tb, child, d.export, spec, 1)
		}
		serve := cputime.Start()
		res := replayRun(tb, child, d.export, spec, 2)
		r.serve = max(r.serve, serve.Elapsed())
		return res
	})
	for i := range aheadPairs {
		for _, on := range []bool{true, false} {
			spec.DecodeAhead, spec.Label = -1, fmt.Sprintf("replay-inline%d", i)
			if on {
				spec.DecodeAhead, spec.Label = 2, fmt.Sprintf("replay-ahead%d", i) // the depth decodeDepth turns on at GOMAXPROCS 3
			}
			res := replayRun(tb, child, d.export, spec, 2)
			if on {
				r.on = append(r.on, res)
			} else {
				r.off = append(r.off, res)
			}
		}
	}
	for _, res := range append([]benchResult{d.exportRes, r.one, r.two}, append(r.on, r.off...)...) {
		if res.Rows != int64(real.rows) || res.Bytes != real.bytes {
			tb.Fatalf("from the recorded source: %d rows in %d bytes, from the server %d in %d", res.Rows, res.Bytes, real.rows, real.bytes)
		}
	}
	return r
}

// replayTable prints the figures from the recorded source: the export and
// its references, and decode-ahead on and off at GOMAXPROCS 2.
func replayTable(rows []replayRow) string {
	var t strings.Builder
	fmt.Fprintf(&t, "\nThe same day from a recorded source (replayed from memory: the client is the bottleneck); raw read in a child at GOMAXPROCS 1, DuckDB encode as above\n")
	for _, r := range rows {
		fmt.Fprintf(&t, "Recorded for %d rows: %s. Replaying the export at GOMAXPROCS 2 cost the test process %.2f CPU s\n", r.rows, r.recorded, r.serve.Seconds())
	}
	fmt.Fprintf(&t, "| rows | replay raw read CPU s | wall s | daybook CPU s, GOMAXPROCS 1 | 2 | wall s, GOMAXPROCS 1 | 2 | wall 2 ÷ wall 1 | target | wall 2 ÷ replay raw read | CPU ÷ (replay raw read + DuckDB), 1 | 2 |\n")
	fmt.Fprintf(&t, "|-----:|----------------------:|-------:|----------------------------:|--:|---------------------:|--:|----------------:|-------:|-------------------------:|------------------------------------:|--:|\n")
	for _, r := range rows {
		ref := (r.raw + r.duck).Seconds()
		speedup := r.two.Wall.Seconds() / r.one.Wall.Seconds()
		fmt.Fprintf(&t, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx | ≤%.1fx %s | %.2fx | %.2fx | %.2fx |\n",
			r.rows, r.raw.Seconds(), r.rawWall.Seconds(), r.one.CPU.Seconds(), r.two.CPU.Seconds(), r.one.Wall.Seconds(), r.two.Wall.Seconds(),
			speedup, targetTwoOverOne, verdict(speedup <= targetTwoOverOne), r.two.Wall.Seconds()/r.rawWall.Seconds(),
			r.one.CPU.Seconds()/ref, r.two.CPU.Seconds()/ref)
	}
	fmt.Fprintf(&t, "\nGOMAXPROCS 2 from the recorded source, the read's decode-ahead goroutine forced on (depth 2) and off, %d runs of each in turns: median (runs)\n", aheadPairs)
	fmt.Fprintf(&t, "| rows | CPU s, on | off | on ÷ off | wall s, on | off | on ÷ off | peak RSS MiB, on | off |\n")
	fmt.Fprintf(&t, "|-----:|----------:|----:|---------:|-----------:|----:|---------:|-----------------:|----:|\n")
	for _, r := range rows {
		cpuOn, cpuOff := median(r.on, func(b benchResult) float64 { return b.CPU.Seconds() }), median(r.off, func(b benchResult) float64 { return b.CPU.Seconds() })
		wallOn, wallOff := median(r.on, func(b benchResult) float64 { return b.Wall.Seconds() }), median(r.off, func(b benchResult) float64 { return b.Wall.Seconds() })
		rssOn, rssOff := median(r.on, func(b benchResult) float64 { return float64(b.PeakRSS) / (1 << 20) }), median(r.off, func(b benchResult) float64 { return float64(b.PeakRSS) / (1 << 20) })
		fmt.Fprintf(&t, "| %d | %.2f (%s) | %.2f (%s) | %.2fx | %.2f (%s) | %.2f (%s) | %.2fx | %.1f | %.1f |\n", r.rows,
			cpuOn, runList(r.on, func(b benchResult) time.Duration { return b.CPU }), cpuOff, runList(r.off, func(b benchResult) time.Duration { return b.CPU }), cpuOn/cpuOff,
			wallOn, runList(r.on, func(b benchResult) time.Duration { return b.Wall }), wallOff, runList(r.off, func(b benchResult) time.Duration { return b.Wall }), wallOn/wallOff,
			rssOn, rssOff)
	}
	return t.String()
}

// benchRuns is how many times each figure of a table is measured: the
// table shows the median, so one run slowed or sped by the machine does
// not decide a verdict.
const benchRuns = 3

// onesAndTwos runs run at GOMAXPROCS 1 and 2 in turns, benchRuns times
// each, and returns the median of each (medianResult).
func onesAndTwos(tb testing.TB, run func(procs int) benchResult) (one, two benchResult) {
	var ones, twos []benchResult
	for range benchRuns {
		ones = append(ones, run(1))
		twos = append(twos, run(2))
	}
	return medianResult(tb, ones), medianResult(tb, twos)
}

// medianResult is rs[0] with its CPU and wall time the medians of rs's
// (each on its own: they may come from different runs). Every run must
// have written the same rows and bytes.
func medianResult(tb testing.TB, rs []benchResult) benchResult {
	r := rs[0]
	for _, x := range rs[1:] {
		if x.Rows != r.Rows || x.Bytes != r.Bytes {
			tb.Fatalf("runs of one measure wrote %d rows in %d bytes and %d in %d", r.Rows, r.Bytes, x.Rows, x.Bytes)
		}
	}
	r.CPU = time.Duration(median(rs, func(b benchResult) float64 { return float64(b.CPU) }))
	r.Wall = time.Duration(median(rs, func(b benchResult) float64 { return float64(b.Wall) }))
	return r
}

// median is the median of f over rs.
func median(rs []benchResult, f func(benchResult) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// runList lists f of each of rs in seconds, in run order.
func runList(rs []benchResult, f func(benchResult) time.Duration) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.2f", f(r).Seconds())
	}
	return strings.Join(s, " ")
}

// checkReplay is TestBenchChild's check of the replay path: two recordings
// of the child's export of acct's day have the same connections sending
// the same byte counts (what a byte-count replay needs), and the export
// and the raw read from a replay give what the server gave (real).
func checkReplay(t *testing.T, child, dsn, acct string, real benchResult) {
	d, again := recordDay(t, child, dsn, acct), recordDay(t, child, dsn, acct)
	for _, pair := range [][2]*pgreplay.Recording{{d.export, again.export}, {d.raw, again.raw}} {
		a, b := clientBytes(pair[0]), clientBytes(pair[1])
		if !slices.Equal(a, b) {
			t.Errorf("two recordings of one session: connections' client bytes %v and %v", a, b)
		}
	}
	spec := benchChild{Account: acct, Day: benchDay.String()}
	for _, procs := range []int{1, 2} {
		if res := replayRun(t, child, d.export, spec, procs); res.Rows != real.Rows || res.Bytes != real.Bytes {
			t.Errorf("export from the replay at GOMAXPROCS %d: %d rows in %d bytes, from the server %d in %d", procs, res.Rows, res.Bytes, real.Rows, real.Bytes)
		}
	}
	spec.DecodeAhead = 2
	if res := replayRun(t, child, d.export, spec, 2); res.Rows != real.Rows || res.Bytes != real.Bytes {
		t.Errorf("export from the replay, decoding ahead: %d rows in %d bytes, from the server %d in %d", res.Rows, res.Bytes, real.Rows, real.Bytes)
	}
	if raw := replayRun(t, child, d.raw, benchChild{RawCopy: rawCopy(acct)}, 1); raw.Bytes == 0 || raw.Bytes != d.rawRes.Bytes || raw.CPU <= 0 {
		t.Errorf("raw read from the replay: %+v, from the server %d bytes", raw, d.rawRes.Bytes)
	}
}

func clientBytes(r *pgreplay.Recording) []int64 {
	var n []int64
	for _, c := range r.Conns {
		n = append(n, c.ClientBytes)
	}
	return n
}
