package main

import (
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/envvar"
)

func TestLoadConfig(t *testing.T) {
	c, err := loadConfig(envvar.From(map[string]string{
		"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", "JOBS_DLQ_URL": "d", "SOURCE_DRIVER": "sqlite", "SOURCE_DSN": "file:x.db",
		"EXPORTER_TIMEOUT_SECONDS": "900", "MAX_FILE_BYTES": "1048576",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ledger.Lease != 20*time.Minute || c.MaxFileBytes != 1<<20 || c.DLQURL != "d" || c.PartSize != 0 ||
		c.SliceRows != DefaultSliceRows || c.MaxSlices != DefaultMaxSlices {
		t.Fatalf("config %+v", c)
	}
	if c.Rules.DeploymentAccountID != "" || c.Rules.AllowPrivateEndpoints || c.Local {
		t.Fatalf("rules %+v, local %v without their variables", c.Rules, c.Local)
	}
	// The deployment's account rules, and loopback endpoints only on a
	// local stack.
	c, err = loadConfig(envvar.From(map[string]string{
		"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", "SOURCE_DSN": "file:x.db",
		"DEPLOYMENT_ACCOUNT_ID": "210987654321", "CUSTOMER_ROLE_PATTERN": "arn:aws:iam::*:role/daybook-export-*",
		"ALLOW_PRIVATE_ENDPOINTS": "true", "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
	}))
	if err != nil || c.Rules.DeploymentAccountID != "210987654321" || !c.Rules.AllowPrivateEndpoints || !c.Local ||
		c.Rules.RolePattern != "arn:aws:iam::*:role/daybook-export-*" {
		t.Fatalf("config %+v, %v", c, err)
	}
	for endpoint, local := range map[string]bool{"http://localhost:4566": true, "http://[::1]:9000": true, "https://s3.example.com": false, "http://10.0.0.5:9000": false} {
		c, _ := loadConfig(envvar.From(map[string]string{"AWS_ENDPOINT_URL": endpoint}))
		if c.Local != local {
			t.Errorf("AWS_ENDPOINT_URL=%s: local %v, want %v", endpoint, c.Local, local)
		}
	}
	_, err = loadConfig(envvar.From(map[string]string{"UPLOAD_CONCURRENCY": "-1", "DEPLOYMENT_ACCOUNT_ID": "42", "ALLOW_PRIVATE_ENDPOINTS": "maybe",
		"SLICE_ROWS": "-5", "MAX_SLICES": "1", "EXPORTER_TIMEOUT_SECONDS": "170"}))
	for _, want := range []string{"LEDGER_TABLE is required", "JOBS_QUEUE_URL is required", "SOURCE_DSN is required", `UPLOAD_CONCURRENCY="-1"`,
		`DEPLOYMENT_ACCOUNT_ID="42"`, `ALLOW_PRIVATE_ENDPOINTS="maybe"`, `SLICE_ROWS="-5"`, `MAX_SLICES="1"`, `EXPORTER_TIMEOUT_SECONDS="170": want at least 180`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// TestTimeoutTooShortForTheSliceCommit: an exporter timeout below what a
// sliced day's commit needs is refused at start, naming the variable (on
// the old code 170 s was accepted and such a day handed its commit on
// forever); the template's minimum is the same figure, and it is accepted.
func TestTimeoutTooShortForTheSliceCommit(t *testing.T) {
	env := func(timeout string) map[string]string {
		return map[string]string{"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", "SOURCE_DSN": "file:x.db", "EXPORTER_TIMEOUT_SECONDS": timeout}
	}
	for _, tc := range []struct {
		timeout string
		ok      bool
	}{{"179", false}, {"60", false}, {"180", true}, {"900", true}} {
		_, err := loadConfig(envvar.From(env(tc.timeout)))
		if tc.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "EXPORTER_TIMEOUT_SECONDS=\""+tc.timeout+"\"") {
			t.Errorf("EXPORTER_TIMEOUT_SECONDS=%s: error %v, want ok %v", tc.timeout, err, tc.ok)
		}
	}
	if MinTimeout != 180*time.Second {
		t.Errorf("MinTimeout %s: the template's ExporterTimeoutSeconds MinValue is 180", MinTimeout)
	}
	// At the minimum a fresh invocation still has the reserve and the
	// commit's time left after its start-up.
	if MinTimeout-commitStartup < DefaultReserve+minCommitTime {
		t.Errorf("MinTimeout %s leaves less than the commit needs", MinTimeout)
	}
}
