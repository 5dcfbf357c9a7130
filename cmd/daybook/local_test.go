package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLocalDevCommands drives the documented local workflow through the CLI:
// local up (moto + template.yaml), account put, requeue, the sweeper's
// bootstrap under the runtime emulator via local invoke, status, local down.
func TestLocalDevCommands(t *testing.T) {
	dir := t.TempDir()
	buildBootstraps(t, filepath.Join(dir, "bin"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, &out); err != nil {
			t.Fatalf("daybook %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	env := filepath.Join(dir, "env.json")

	out := cli("local", "up", "--dir", dir, "--template", "../../template.yaml", "--stage", "clitest")
	pid, err := readPid(localDir(dir))
	if err != nil {
		t.Fatalf("no pid file after local up: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = run(context.Background(), []string{"local", "down", "--dir", dir}, &bytes.Buffer{}) })
	if !strings.Contains(out, "deployed") {
		t.Errorf("local up said %q", out)
	}

	closed := time.Now().UTC().AddDate(0, 0, -3).Format("2006-01-02") // closed whatever the hour
	acctFile := filepath.Join(dir, "account.json")
	if err := os.WriteFile(acctFile, []byte(`{"name":"cli test","enabled":true,"start_date":"`+closed+`",
		"datasets":["events"],"destination":{"bucket":"daybook-exports-clitest"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(cli("account", "put", "--file", acctFile, "--env-file", env)), &acct); err != nil || !strings.HasPrefix(acct.ID, "acct_") {
		t.Fatalf("account put: id %q, %v", acct.ID, err)
	}
	if out := cli("account", "list", "--env-file", env); !strings.Contains(out, acct.ID) {
		t.Errorf("account list lacks %s:\n%s", acct.ID, out)
	}
	var rq struct {
		Queued int `json:"queued"`
	}
	if err := json.Unmarshal([]byte(cli("requeue", "--account", acct.ID, "--dataset", "events", "--from", closed, "--to", closed, "--env-file", env)), &rq); err != nil || rq.Queued != 1 {
		t.Fatalf("requeue: %+v %v", rq, err)
	}

	var sum struct {
		Accounts int `json:"accounts"`
		Claimed  int `json:"claimed"`
		Enqueued int `json:"enqueued"`
	}
	out = cli("local", "invoke", "SweeperFunction", "--dir", dir, "--event", "../../events/sweeper-schedule.json")
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("sweeper response %q: %v", out, err)
	}
	if sum.Accounts != 1 || sum.Claimed < 1 || sum.Enqueued != sum.Claimed {
		t.Errorf("sweep summary %+v", sum)
	}
	if out := cli("status", "--account", acct.ID, "--env-file", env); !strings.Contains(out, "events: ") || !strings.Contains(out, "running") {
		t.Errorf("status after the sweep:\n%s", out)
	}

	cli("local", "down", "--dir", dir)
	if alive(pid) {
		t.Errorf("moto_server pid %d still running after local down", pid)
	}
}
