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
	if c.Ledger.Lease != 20*time.Minute || c.MaxFileBytes != 1<<20 || c.DLQURL != "d" || c.PartSize != 0 {
		t.Fatalf("config %+v", c)
	}
	_, err = loadConfig(envvar.From(map[string]string{"UPLOAD_CONCURRENCY": "-1"}))
	for _, want := range []string{"LEDGER_TABLE is required", "JOBS_QUEUE_URL is required", "SOURCE_DSN is required", `UPLOAD_CONCURRENCY="-1"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
