//go:build !noduckdb

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestSkewedDayThroughTheBootstrap: the exporter's real bootstrap (built
// as the Lambda is) under the Lambda runtime emulator, with the deployed
// template's environment and its every call checked against the exporter's
// policy, exports a day whose rows crowd into one hour in slices of about
// equal rows: the plan's bounds come from the rows through the source
// router main wires, where equal time ranges would put most of the day in
// one slice. Every row is delivered once.
func TestSkewedDayThroughTheBootstrap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const rows, slicesWanted = 3000, 4
	opts := envOpts{ownQueue: true, env: map[string]string{"SLICE_ROWS": "750"}}
	e := newEnv(t, opts)
	// The bootstrap runs on the wall clock: so do the test's claims.
	e.clk.Set(time.Now().UTC().Truncate(time.Second))
	in := genRows("events", testDay, rows)
	hot := testDay.Start(time.UTC).Add(14 * time.Hour)
	for i, r := range in {
		if i%5 != 0 {
			ts := hot.Add(time.Duration(int64(i)*2654435761%3_600_000_000) * time.Microsecond)
			r[2], r[3] = ts, ts.Add(time.Second)
		}
	}
	e.insert("events", in...)

	dir := t.TempDir()
	hostbuild.Bootstraps(t, dir, "ExporterFunction")
	cfg, _ := deployed(t)
	endpoint := iamcheck.Endpoint(t, iamcheck.ForStage(t, stackStage, nil), iamcheck.Route{Function: "ExporterFunction", Upstream: *cfg.BaseEndpoint,
		Names: iamcheck.Names{Own: samstacktest.Like}})
	env := e.functionEnv(opts, endpoint)
	for k, v := range map[string]string{"AWS_REGION": motoserver.Region, "AWS_ACCESS_KEY_ID": iamcheck.DefaultKey, "AWS_SECRET_ACCESS_KEY": "testing"} {
		env[k] = v
	}
	var log strings.Builder
	fn, err := runtimeemulator.Start(ctx, filepath.Join(dir, "ExporterFunction", "bootstrap"), runtimeemulator.Options{Name: "ExporterFunction", Env: env, Log: &log, Timeout: 900 * time.Second}) // the template's ExporterTimeoutSeconds
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Stop()
	invoke := func(body string) {
		t.Helper()
		ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", EventSource: "aws:sqs", Body: body}}}
		payload, _ := json.Marshal(ev)
		out, err := fn.Invoke(ctx, payload)
		var resp events.SQSEventResponse
		if err != nil || json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("invoke: %s %v\n%s", out, err, log.String())
		}
	}

	invoke(jobBody(t, e.claim("events", testDay, "")))
	if r := e.row("events", testDay); r.State != ledger.StateRunning {
		t.Fatalf("after the plan the partition is %+v\n%s", r, log.String())
	}
	bodies := e.receive(e.queueURL)
	if len(bodies) != slicesWanted {
		t.Fatalf("%d slice messages, want %d\n%s", len(bodies), slicesWanted, log.String())
	}
	for i := range slicesWanted {
		invoke(bodies[i])
	}
	if r := e.row("events", testDay); r.State != ledger.StateCompleted || r.Rows != rows {
		t.Fatalf("after the last slice: %s %+v\n%s", r.State, r, log.String())
	}
	plan, sls, err := e.led.Slices().SlicesOf(e.ctx, e.key("events", testDay))
	if err != nil || len(plan.Bounds) != slicesWanted-1 || len(sls) != slicesWanted {
		t.Fatalf("plan %+v, %d slices, %v: want %d bounds placed from the rows", plan, len(sls), err, slicesWanted-1)
	}
	var counts []int64
	for _, sl := range sls {
		counts = append(counts, sl.Rows)
	}
	t.Logf("rows per slice %v", counts)
	if largest := float64(slices.Max(counts)) * slicesWanted / rows; largest > 1.25 {
		t.Errorf("the largest slice holds %.2fx the mean rows, want at most 1.25x: %v", largest, counts)
	}
	e.committed("events", testDay)
	e.exactlyOnce(rows)
}
