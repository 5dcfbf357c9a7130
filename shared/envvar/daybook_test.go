package envvar

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDaybookVariables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		env    map[string]string
		stage  string
		settle time.Duration
		level  string
		err    string
	}{
		{"unset", nil, DefaultStage, DefaultSettleDelay, DefaultLogLevel, ""},
		{"empty", map[string]string{"DAYBOOK_STAGE": "", "SETTLE_DELAY": "", "LOG_LEVEL": ""}, DefaultStage, DefaultSettleDelay, DefaultLogLevel, ""},
		{"set", map[string]string{"DAYBOOK_STAGE": "prod", "SETTLE_DELAY": "90m", "LOG_LEVEL": "DEBUG"}, "prod", 90 * time.Minute, "DEBUG", ""},
		{"lambda level first", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "WARN", "LOG_LEVEL": "DEBUG"}, DefaultStage, DefaultSettleDelay, "WARN", ""},
		{"bad settle delay", map[string]string{"SETTLE_DELAY": "soon"}, DefaultStage, DefaultSettleDelay, DefaultLogLevel, `SETTLE_DELAY="soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := From(tt.env)
			if got := r.Stage(); got != tt.stage {
				t.Errorf("Stage() = %q, want %q", got, tt.stage)
			}
			if got := r.SettleDelay(); got != tt.settle {
				t.Errorf("SettleDelay() = %s, want %s", got, tt.settle)
			}
			if got := r.LogLevel(); got != tt.level {
				t.Errorf("LogLevel() = %q, want %q", got, tt.level)
			}
			if err := r.Err(); tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("Err() = %v, want %q", err, tt.err)
			}
		})
	}
}

// TestTemplateDefaults holds template.yaml's parameter defaults, which a
// deployment passes to these variables, to the defaults defined here.
func TestTemplateDefaults(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Parameters are two-space indented names with four-space indented
	// properties; ApplicationLogLevel sets AWS_LAMBDA_LOG_LEVEL.
	defaults := map[string]string{}
	param := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":"):
			param = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case strings.HasPrefix(line, "    Default: ") && param != "":
			defaults[param] = strings.TrimPrefix(line, "    Default: ")
		case strings.Contains(line, "ApplicationLogLevel: "):
			_, defaults["ApplicationLogLevel"], _ = strings.Cut(line, "ApplicationLogLevel: ")
		case line != "" && !strings.HasPrefix(line, " "):
			param = "" // a new top-level section
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	seconds := func(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) }
	want := []struct{ param, value string }{
		{"Stage", DefaultStage},
		{"ApplicationLogLevel", DefaultLogLevel},
		{"ExporterTimeoutSeconds", seconds(DefaultExporterTimeout)},
		{"LeaseMarginSeconds", seconds(DefaultLeaseMargin)},
		{"MaxAttempts", strconv.Itoa(DefaultMaxAttempts)},
		{"MaxBackfillDays", strconv.Itoa(DefaultMaxBackfillDays)},
		{"SweepSchedule", DefaultSweepSchedule},
		{"PerAccountCap", strconv.Itoa(DefaultPerAccountCap)},
		{"PerSweepCap", strconv.Itoa(DefaultPerSweepCap)},
		{"ExporterConcurrency", strconv.Itoa(DefaultExporterConcurrency)},
		{"MaterializeRowsPerAccount", strconv.Itoa(DefaultMaterializeRowsPerAccount)},
		{"FanOutAccounts", strconv.Itoa(DefaultFanOutAccounts)},
	}
	for _, w := range want {
		if got, ok := defaults[w.param]; !ok || got != w.value {
			t.Errorf("template.yaml %s default %q (found %v), want %q", w.param, got, ok, w.value)
		}
	}
	if got, err := time.ParseDuration(defaults["SettleDelay"]); err != nil || got != DefaultSettleDelay {
		t.Errorf("template.yaml SettleDelay default %q (%v), want %s", defaults["SettleDelay"], err, DefaultSettleDelay)
	}
}

func TestMaxBackfillDays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want int
		err  string
	}{
		{nil, DefaultMaxBackfillDays, ""},
		{map[string]string{"MAX_BACKFILL_DAYS": ""}, DefaultMaxBackfillDays, ""},
		{map[string]string{"MAX_BACKFILL_DAYS": "30"}, 30, ""},
		{map[string]string{"MAX_BACKFILL_DAYS": "0"}, DefaultMaxBackfillDays, `MAX_BACKFILL_DAYS="0"`},
		{map[string]string{"MAX_BACKFILL_DAYS": "a year"}, DefaultMaxBackfillDays, `MAX_BACKFILL_DAYS="a year"`},
	} {
		r := From(tc.env)
		got := r.MaxBackfillDays()
		if err := r.Err(); got != tc.want || tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: MaxBackfillDays() = %d, %v; want %d, %q", tc.env, got, err, tc.want, tc.err)
		}
	}
}
