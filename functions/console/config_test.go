package main

import (
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	base := func(kv ...string) map[string]string {
		env := map[string]string{"LEDGER_TABLE": "daybook-dev-ledger", "JOBS_QUEUE_URL": "https://sqs/jobs", "DAYBOOK_STAGE": "dev",
			"DEPLOYMENT_ACCOUNT_ID": "123456789012", "CUSTOMER_ROLE_PATTERN": "arn:aws:iam::*:role/daybook-export-*"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(env, kv[i])
				continue
			}
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	tests := []struct {
		name    string
		env     map[string]string
		actions bool
		err     string
	}{
		{"read-only by default", base(), false, ""},
		{"actions", base("CONSOLE_ACTIONS", "true"), true, ""},
		{"actions off", base("CONSOLE_ACTIONS", "false"), false, ""},
		{"actions not a boolean", base("CONSOLE_ACTIONS", "yes please"), false, `CONSOLE_ACTIONS="yes please": want true or false`},
		{"actions without a queue", base("CONSOLE_ACTIONS", "true", "JOBS_QUEUE_URL", ""), true, "JOBS_QUEUE_URL is not set"},
		{"no table", base("LEDGER_TABLE", ""), false, "LEDGER_TABLE"},
		{"a malformed account rule", base("DEPLOYMENT_ACCOUNT_ID", "12"), false, "DEPLOYMENT_ACCOUNT_ID"},
		{"a malformed settle delay", base("SETTLE_DELAY", "soon"), false, "SETTLE_DELAY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(tt.env)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want one naming %q", err, tt.err)
			}
			if c.Actions != tt.actions {
				t.Errorf("actions %v, want %v", c.Actions, tt.actions)
			}
			if tt.err == "" && (c.Ledger.Table != "daybook-dev-ledger" || c.Stage != "dev" || c.SettleDelay != 2*time.Hour || c.Rules.DeploymentAccountID != "123456789012") {
				t.Errorf("config %+v", c)
			}
		})
	}
}
