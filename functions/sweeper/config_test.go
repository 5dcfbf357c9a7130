package main

import (
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/envvar"
)

func TestLoadConfig(t *testing.T) {
	c, err := loadConfig(envvar.From(map[string]string{
		"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", "EXPORTER_TIMEOUT_SECONDS": "600", "LEASE_MARGIN_SECONDS": "120",
		"PER_ACCOUNT_CAP": "3", "SETTLE_DELAY": "90m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ledger.Lease != 12*time.Minute || c.Ledger.Table != "t" || c.PerAccountCap != 3 || c.PerSweepCap != 200 || c.SettleDelay != 90*time.Minute {
		t.Fatalf("config %+v", c)
	}
	_, err = loadConfig(envvar.From(map[string]string{"PER_SWEEP_CAP": "lots", "SETTLE_DELAY": "soon"}))
	for _, want := range []string{"LEDGER_TABLE is required", "JOBS_QUEUE_URL is required", `PER_SWEEP_CAP="lots"`, `SETTLE_DELAY="soon"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
