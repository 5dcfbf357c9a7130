package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
)

// emf decodes the EMF lines an emitter wrote into metric name → values.
func emf(t *testing.T, b []byte) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		aws := m["_aws"].(map[string]any)
		for _, d := range aws["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any) {
			name := d.(map[string]any)["Name"].(string)
			out[name] = append(out[name], m[name].(float64))
		}
	}
	return out
}

func TestMetricsPerOutcome(t *testing.T) {
	e := newEnv(t, envOpts{})
	var buf bytes.Buffer
	e.svc.Metrics = &metrics.Emitter{W: &buf, Stage: testStage, Now: e.clk.Now}
	e.insert("events", genRows("events", testDay, 7)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("row %+v", r)
	}
	got := emf(t, buf.Bytes())
	if v := got["PartitionsExported"]; len(v) != 1 || v[0] != 1 || got["RowsExported"][0] != 7 || got["BytesExported"][0] <= 0 {
		t.Fatalf("metrics after a completed export: %v", got)
	}

	buf.Reset()
	e.faults.set(once(func(key string) bool { return strings.HasSuffix(key, "_manifest.json") }), nil)
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	got = emf(t, buf.Bytes())
	if v := got["PartitionFailures"]; len(v) != 1 || v[0] != 1 || got["PartitionsExhausted"][0] != 0 {
		t.Fatalf("metrics after a failed export: %v", got)
	}
}

// A run cut short by the invocation's deadline still records its failure:
// the export stops Reserve before the deadline, the ledger write outlives it.
func TestDeadlineRecordsFailure(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 5)...)
	e.svc.Reserve = time.Hour // the export's own deadline is already past
	c := e.claim("events", testDay, "")
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if err := e.svc.Process(ctx, "msg-deadline", jobBody(t, c)); err != nil {
		t.Fatalf("Process = %v; the failure should be recorded, not redelivered", err)
	}
	r := e.row("events", testDay)
	if r.State != ledger.StateFailed || !strings.Contains(r.LastError, "deadline") {
		t.Fatalf("row %s: state %s, last error %q", r.Key, r.State, r.LastError)
	}
	if objs := e.list(e.partPrefix("events", testDay)); len(objs) != 0 {
		t.Errorf("objects left: %v", sortedKeys(objs))
	}
	if open := e.openUploads(); len(open) != 0 {
		t.Errorf("open multipart uploads: %v", open)
	}
}

func TestDisabledAccountRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.acct
	a.Enabled = false
	if err := e.led.PutAccount(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	err := e.process(manualBody(t, jobs.Manual{AccountID: a.ID, Dataset: "events", Day: testDay.String()}))
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("Process = %v, want ErrRejected naming the disabled account", err)
	}
	if _, err := e.led.Get(e.ctx, e.key("events", testDay)); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused request wrote a ledger row: %v", err)
	}
}
