package envvar

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRestateVariables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		lookback int
		interval time.Duration
		cap      int
		bus      string
		err      string
	}{
		{"unset", nil, DefaultRestateLookbackDays, DefaultRestateInterval, DefaultRestatePerSweepCap, "", ""},
		{"set", map[string]string{"RESTATE_LOOKBACK_DAYS": "3", "RESTATE_INTERVAL": "90m", "RESTATE_PER_SWEEP_CAP": "5", "EVENT_BUS_NAME": "daybook-dev"},
			3, 90 * time.Minute, 5, "daybook-dev", ""},
		{"off", map[string]string{"RESTATE_LOOKBACK_DAYS": "0"}, 0, DefaultRestateInterval, DefaultRestatePerSweepCap, "", ""},
		{"bad lookback", map[string]string{"RESTATE_LOOKBACK_DAYS": "week"}, DefaultRestateLookbackDays, DefaultRestateInterval, DefaultRestatePerSweepCap, "", `RESTATE_LOOKBACK_DAYS="week"`},
		{"interval too short", map[string]string{"RESTATE_INTERVAL": "10s"}, DefaultRestateLookbackDays, DefaultRestateInterval, DefaultRestatePerSweepCap, "", `RESTATE_INTERVAL="10s": want at least 1m`},
		{"bad interval", map[string]string{"RESTATE_INTERVAL": "often"}, DefaultRestateLookbackDays, DefaultRestateInterval, DefaultRestatePerSweepCap, "", `RESTATE_INTERVAL="often"`},
		{"zero cap", map[string]string{"RESTATE_PER_SWEEP_CAP": "0"}, DefaultRestateLookbackDays, DefaultRestateInterval, DefaultRestatePerSweepCap, "", `RESTATE_PER_SWEEP_CAP="0": want at least 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := From(tt.env)
			if got := r.RestateLookbackDays(); got != tt.lookback {
				t.Errorf("RestateLookbackDays() = %d, want %d", got, tt.lookback)
			}
			if got := r.RestateInterval(); got != tt.interval {
				t.Errorf("RestateInterval() = %s, want %s", got, tt.interval)
			}
			if got := r.RestatePerSweepCap(); got != tt.cap {
				t.Errorf("RestatePerSweepCap() = %d, want %d", got, tt.cap)
			}
			if got := r.EventBusName(); got != tt.bus {
				t.Errorf("EventBusName() = %q, want %q", got, tt.bus)
			}
			if err := r.Err(); tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("Err() = %v, want %q", err, tt.err)
			}
		})
	}
}

// TestRestateTemplateDefaults holds template.yaml's restatement parameter
// defaults to the defaults defined here.
func TestRestateTemplateDefaults(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def := func(param string) string {
		m := regexp.MustCompile(`(?m)^  ` + param + `:\n(?:    .*\n)*?    Default: (.+)$`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("template.yaml has no parameter %s with a default", param)
		}
		return m[1]
	}
	if got := def("RestateLookbackDays"); got != strconv.Itoa(DefaultRestateLookbackDays) {
		t.Errorf("RestateLookbackDays default %s, want %d", got, DefaultRestateLookbackDays)
	}
	if got, err := time.ParseDuration(def("RestateInterval")); err != nil || got != DefaultRestateInterval {
		t.Errorf("RestateInterval default %s (%v), want %s", def("RestateInterval"), err, DefaultRestateInterval)
	}
	if got := def("RestatePerSweepCap"); got != strconv.Itoa(DefaultRestatePerSweepCap) {
		t.Errorf("RestatePerSweepCap default %s, want %d", got, DefaultRestatePerSweepCap)
	}
}
