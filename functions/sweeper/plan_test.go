package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

func row(acct, day string, scheduled bool) ledger.Row {
	r := ledger.Row{Key: partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse(day)}}
	if scheduled {
		r.DueKey = "S#" + day + "#events"
	}
	return r
}

func TestSelectRows(t *testing.T) {
	t.Parallel()
	a := []ledger.Row{row("a", "2026-03-31", true), row("a", "2026-01-01", false), row("a", "2026-01-02", false)}
	b := []ledger.Row{row("b", "2026-02-01", false), row("b", "2026-02-02", false)}
	c := []ledger.Row{row("c", "2026-03-31", true)}
	cases := []struct {
		name   string
		queues [][]ledger.Row
		limit  int
		start  int
		want   string
	}{
		{"scheduled of every account before any backfill", [][]ledger.Row{a, b, c}, 2, 0, "a/2026-03-31 c/2026-03-31"},
		{"then round-robin in S1 order", [][]ledger.Row{a, b, c}, 5, 0, "a/2026-03-31 c/2026-03-31 a/2026-01-01 b/2026-02-01 a/2026-01-02"},
		{"rotation", [][]ledger.Row{a, b, c}, 3, 1, "c/2026-03-31 a/2026-03-31 b/2026-02-01"},
		{"everything", [][]ledger.Row{a, b, c}, 100, 0, "a/2026-03-31 c/2026-03-31 a/2026-01-01 b/2026-02-01 a/2026-01-02 b/2026-02-02"},
		{"no budget", [][]ledger.Row{a, b, c}, 0, 0, ""},
		{"no scheduled rows: plain round-robin", [][]ledger.Row{b, a[1:]}, 3, 0, "b/2026-02-01 a/2026-01-01 b/2026-02-02"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range selectRows(tc.queues, tc.limit, tc.start) {
				got = append(got, r.AccountID+"/"+r.Day.String())
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got  %s\nwant %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestPlanChunks(t *testing.T) {
	t.Parallel()
	d := civil.MustParse
	show := func(cs []chunk) string {
		var out []string
		for _, c := range cs {
			s := fmt.Sprint(len(c.days))
			if len(c.days) > 0 {
				s += " " + c.days[0].String() + ".." + c.days[len(c.days)-1].String()
			}
			out = append(out, s+" through "+c.through.String())
		}
		return strings.Join(out, "; ")
	}
	zero := civil.Date{}
	cases := []struct {
		name     string
		froms    []civil.Date
		closed   civil.Date
		priority civil.Date
		budget   int
		want     string
	}{
		{"one new day", []civil.Date{d("2026-03-31")}, d("2026-03-31"), d("2026-03-31"), 400, "1 2026-03-31..2026-03-31 through 2026-03-31"},
		{"backfill in one chunk", []civil.Date{d("2026-03-01")}, d("2026-03-31"), zero, 400, "31 2026-03-01..2026-03-31 through 2026-03-31"},
		{"chunked: the watermark advances per chunk", []civil.Date{d("2026-01-01")}, d("2026-03-31"), zero, 10, "10 2026-01-01..2026-01-10 through 2026-01-10"},
		{"chunked with the newest day first", []civil.Date{d("2026-01-01")}, d("2026-03-31"), d("2026-03-31"), 10, "10 2026-03-31..2026-01-09 through 2026-01-09"},
		{"the chunk reaches the newest day", []civil.Date{d("2026-03-29")}, d("2026-03-31"), d("2026-03-31"), 10, "3 2026-03-31..2026-03-30 through 2026-03-31"},
		{"datasets share the budget", []civil.Date{d("2026-01-01"), d("2026-03-31"), d("2026-02-01")}, d("2026-03-31"), d("2026-03-31"), 7,
			"3 2026-03-31..2026-01-02 through 2026-01-02; 1 2026-03-31..2026-03-31 through 2026-03-31; 3 2026-03-31..2026-02-02 through 2026-02-02"},
		{"nothing to do", []civil.Date{d("2026-04-01")}, d("2026-03-31"), d("2026-03-31"), 10, "0 through "},
		{"no budget", []civil.Date{d("2026-03-01")}, d("2026-03-31"), d("2026-03-31"), 0, "0 through "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(planChunks(tc.froms, tc.closed, tc.priority, tc.budget)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	c := Capacity{ExporterConcurrency: 100, ExporterTimeout: 900 * time.Second, Interval: 15 * time.Minute, Lease: 20 * time.Minute}
	cases := []struct {
		name    string
		c       Capacity
		mean    time.Duration
		waiting int
		cap     int
		want    int
	}{
		{"100 exporters, 60 s exports, empty queue: 100 x 900 / 60", c, time.Minute, 0, 3000, 1500},
		{"jobs already waiting or running count against it", c, time.Minute, 400, 3000, 1100},
		{"a full queue claims nothing", c, time.Minute, 5000, 3000, 0},
		{"no exports recorded: assume the timeout", c, 0, 0, 3000, 100},
		{"bounded by configuration", c, 5 * time.Second, 0, 3000, 3000},
		{"a lease shorter than the interval bounds the horizon", Capacity{ExporterConcurrency: 20, ExporterTimeout: time.Minute, Interval: time.Hour, Lease: 10 * time.Minute}, time.Minute, 0, 3000, 200},
		{"20 exporters, 90 s exports (the old default)", Capacity{ExporterConcurrency: 20, ExporterTimeout: 900 * time.Second, Interval: 15 * time.Minute, Lease: 20 * time.Minute}, 90 * time.Second, 0, 3000, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Budget(tc.mean, tc.waiting, tc.cap); got != tc.want {
				t.Errorf("Budget = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPlanFanOut(t *testing.T) {
	t.Parallel()
	show := func(js []ShardJob) string {
		var out []string
		for _, j := range js {
			out = append(out, fmt.Sprint(j.Shards, "=", j.Budget))
		}
		return strings.Join(out, " ")
	}
	counts := func(m map[int]int) []int {
		c := make([]int, ledger.FleetShards)
		for k, v := range m {
			c[k] = v
		}
		return c
	}
	cases := []struct {
		name   string
		counts []int
		per    int
		budget int
		want   string
	}{
		{"groups of consecutive shards up to per", counts(map[int]int{0: 1000, 1: 1000, 2: 500, 5: 1500}), 2000, 400, "[0 1]=200 [2 5]=200"},
		{"a shard larger than per stands alone", counts(map[int]int{3: 5000, 4: 10}), 2000, 100, "[3]=100 [4]=0"},
		{"the remainder goes to the largest remainders", counts(map[int]int{0: 1, 1: 2, 2: 2, 3: 1}), 2, 5, "[0]=1 [1]=2 [2]=1 [3]=1"},
		{"nothing woken", counts(nil), 2000, 100, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(planFanOut(tc.counts, tc.per, tc.budget)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"rate(15 minutes)": 15 * time.Minute, "rate(1 minute)": time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour,
	} {
		if got, err := parseRate("SWEEP_SCHEDULE", in); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"cron(0/15 * * * ? *)", "rate(0 minutes)", "rate(15 fortnights)", ""} {
		if _, err := parseRate("SWEEP_SCHEDULE", in); err == nil || !strings.Contains(err.Error(), "SWEEP_SCHEDULE") {
			t.Errorf("%q: error %v, want one naming the variable", in, err)
		}
	}
}
