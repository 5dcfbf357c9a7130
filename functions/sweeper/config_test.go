package main

import (
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/envvar"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(envvar.From(map[string]string{
		"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", "EXPORTER_TIMEOUT_SECONDS": "600", "LEASE_MARGIN_SECONDS": "120",
		"PER_ACCOUNT_CAP": "3", "SETTLE_DELAY": "90m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ledger.Lease != 12*time.Minute || c.Ledger.Table != "t" || c.PerAccountCap != 3 || c.PerSweepCap != envvar.DefaultPerSweepCap || c.SettleDelay != 90*time.Minute {
		t.Fatalf("config %+v", c)
	}
	_, err = loadConfig(envvar.From(map[string]string{"PER_SWEEP_CAP": "lots", "SETTLE_DELAY": "soon"}))
	for _, want := range []string{"LEDGER_TABLE is required", "JOBS_QUEUE_URL is required", `PER_SWEEP_CAP="lots"`, `SETTLE_DELAY="soon"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestLoadConfigFleet(t *testing.T) {
	t.Parallel()
	base := map[string]string{"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q"}
	c, err := loadConfig(envvar.From(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.SweepInterval != 15*time.Minute || c.ExporterConcurrency != envvar.DefaultExporterConcurrency || c.MaterializeRows != 400 || c.SweepQueueURL != "" ||
		c.FanOutAccounts != 2000 || c.Ledger.MaxBackfillDays != 400 || c.ExporterTimeout != 900*time.Second {
		t.Errorf("defaults %+v", c)
	}
	set := map[string]string{"SWEEP_SCHEDULE": "rate(5 minutes)", "EXPORTER_CONCURRENCY": "250", "MATERIALIZE_ROWS_PER_ACCOUNT": "90",
		"SWEEP_QUEUE_URL": "sq", "FAN_OUT_ACCOUNTS": "500", "MAX_BACKFILL_DAYS": "30", "EXPORTER_TIMEOUT_SECONDS": "600"}
	for k, v := range base {
		set[k] = v
	}
	c, err = loadConfig(envvar.From(set))
	if err != nil {
		t.Fatal(err)
	}
	if c.SweepInterval != 5*time.Minute || c.ExporterConcurrency != 250 || c.MaterializeRows != 90 || c.SweepQueueURL != "sq" ||
		c.FanOutAccounts != 500 || c.Ledger.MaxBackfillDays != 30 || c.ExporterTimeout != 10*time.Minute {
		t.Errorf("set %+v", c)
	}
	base["SWEEP_SCHEDULE"], base["EXPORTER_CONCURRENCY"] = "cron(0 * * * ? *)", "many"
	_, err = loadConfig(envvar.From(base))
	for _, want := range []string{`SWEEP_SCHEDULE="cron(0 * * * ? *)"`, `EXPORTER_CONCURRENCY="many"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// TestSettingsThatCannotWork: a setting with which no sweep could claim or
// materialize anything is refused at start, naming the variable (on the old
// code a 0 cap failed every sweep without the variable's name, and an
// exporter concurrency of 0 made every budget 0).
func TestSettingsThatCannotWork(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"PER_ACCOUNT_CAP", "PER_SWEEP_CAP", "EXPORTER_CONCURRENCY", "MATERIALIZE_ROWS_PER_ACCOUNT"} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(envvar.From(map[string]string{"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", name: "0"}))
			if err == nil || !strings.Contains(err.Error(), name+`="0": want at least 1`) {
				t.Errorf("%s=0: error %v", name, err)
			}
			if _, err := loadConfig(envvar.From(map[string]string{"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "q", name: "1"})); err != nil {
				t.Errorf("%s=1: %v", name, err)
			}
		})
	}
}
