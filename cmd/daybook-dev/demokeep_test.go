package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// keptDemo runs, on the end-to-end test's demo kept with --keep, what an
// operator does on it, as docs/development.md's kept-demo lines say:
// its env file names what the CLI reads from local up's (the sweeper's
// dead-letter queue, the direct-bucket pattern: on the old code dlq list
// --queue sweeper failed there and account put took a bucket production
// refuses); a re-export says it waits for local drain; local drain runs it
// and mirrors the buckets again (the mirror kept generation 1); local
// invoke finds the bootstraps with --bin; after local down the CLI names
// the command that starts the demo again, not make local-up.
func keptDemo(t *testing.T, ctx context.Context, res *demoResult, dir, bin string) {
	now := time.Now().UTC()
	envFile := filepath.Join(dir, "env.json")
	op := filepath.Join(bin, operatorName)
	daybook := func(args ...string) (string, string, int) {
		t.Helper()
		var so, se bytes.Buffer
		cmd := exec.CommandContext(ctx, op, args...)
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return so.String(), se.String(), cmd.ProcessState.ExitCode()
	}
	dev := func(args ...string) string {
		t.Helper()
		var so, se bytes.Buffer
		if code := newApp(&so, &se).execute(ctx, args); code != 0 {
			t.Fatalf("daybook-dev %s: exit %d\n%s%s", strings.Join(args, " "), code, so.String(), se.String())
		}
		return so.String()
	}

	env, err := samstack.ReadEnvFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"SWEEPER_DLQ_URL", "DIRECT_BUCKET_PATTERN", "EXPORTER_ROLE_ARN", "DAYBOOK_LOCAL_START", "DAYBOOK_LOCAL_DRAIN"} {
		if env["ExporterFunction"][k] == "" {
			t.Errorf("%s lacks %s", envFile, k)
		}
	}
	if so, se, code := daybook("dlq", "list", "--queue", "sweeper", "--env-file", envFile); code != 0 {
		t.Errorf("dlq list --queue sweeper: exit %d\n%s%s", code, so, se)
	}
	acctFile := filepath.Join(t.TempDir(), "account.json")
	os.WriteFile(acctFile, []byte(`{"name":"outside the pattern","enabled":true,"start_date":"`+now.AddDate(0, 0, -3).Format("2006-01-02")+
		`","datasets":["events"],"destination":{"bucket":"someone-elses-bucket"}}`), 0o644)
	if _, se, code := daybook("account", "put", "--file", acctFile, "--env-file", envFile); code != 1 || !strings.Contains(se, "someone-elses-bucket") {
		t.Errorf("account put of a bucket outside DirectBucketPattern: exit %d\n%s", code, se)
	}

	// A re-export of the first account's re-exported day: queued until drained.
	a0 := res.Accounts[0]
	day := res.Reexported.Day
	prefix, _ := a0.Prefix(res.Stage)
	success := filepath.Join(dir, "buckets", a0.Destination.Bucket, filepath.FromSlash(layout.PartitionPrefix(prefix, "events", day)), layout.SuccessName)
	generation := func() int64 {
		t.Helper()
		b, err := os.ReadFile(success)
		if err != nil {
			t.Fatal(err)
		}
		var s manifest.Success
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Generation
	}
	before := generation()
	_, se, code := daybook("reexport", "--account", a0.ID, "--dataset", "events", "--day", day.String(), "--env-file", envFile)
	if code != 0 || !strings.Contains(se, "nothing runs the requests until daybook-dev local drain --dir "+dir+" --bin "+bin+" feeds the queue") {
		t.Errorf("reexport on the kept demo: exit %d\n%s", code, se)
	}
	// and shown requested by status until the drain claims it.
	if so, se, code := daybook("status", "--account", a0.ID, "--dataset", "events", "--from", day.String(), "--to", day.String(), "--state", "requested", "--env-file", envFile); code != 0 ||
		!strings.Contains(so, "events  +  requested 1") {
		t.Errorf("status after the re-export, before the drain: exit %d\n%s%s", code, so, se)
	}
	drained := dev("local", "drain", "--dir", dir, "--bin", bin)
	if !strings.Contains(drained, "1 partitions exported, 0 failed") || !strings.Contains(drained, "mirrored 5 buckets into "+filepath.Join(dir, "buckets")+" again") {
		t.Errorf("local drain:\n%s", drained)
	}
	if after := generation(); after != before+1 {
		t.Errorf("the mirror's %s: generation %d after the drain, %d before", success, after, before)
	}

	// local invoke with the demo's state and the bootstraps elsewhere.
	if out := dev("local", "invoke", "SweeperFunction", "--dir", dir, "--bin", bin, "--event", "../../events/sweeper-schedule.json"); !strings.Contains(out, `"claimed"`) {
		t.Errorf("local invoke --bin: %s", out)
	}
	var so, se2 bytes.Buffer
	if code := newApp(&so, &se2).execute(ctx, []string{"local", "invoke", "SweeperFunction", "--dir", dir, "--event", "../../events/sweeper-schedule.json"}); code != 1 ||
		!strings.Contains(se2.String(), "no SweeperFunction bootstrap at "+filepath.Join(dir, "bin", "SweeperFunction", "bootstrap")+" (make build writes .local/bin; name another directory with --bin)") {
		t.Errorf("local invoke without --bin: exit %d\n%s", code, se2.String())
	}
}
