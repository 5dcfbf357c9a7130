package startup

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/logging"
)

// The test binary runs Run as a function's main would when started as
// `run-failing`: its build fails the way a misconfigured function's does.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "run-failing" {
		Run("sweeper", func(context.Context, aws.Config) (any, *slog.Logger, error) {
			return nil, logging.ForFunction(os.Stdout, "INFO", "sweeper"), errors.New(`configuration: environment variable JOBS_QUEUE_URL is required`)
		})
		os.Exit(0) // not reached: Run exits
	}
	os.Exit(m.Run())
}

// TestStartFailures: a build that fails, or an SDK configuration that
// cannot load, ends the process with status 2 and one JSON line on stdout
// naming the function and the error, before any handler starts.
func TestStartFailures(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		env      []string
		msg, err string
	}{
		{"build fails", nil, "start-up", "JOBS_QUEUE_URL is required"},
		{"no aws configuration", []string{"AWS_PROFILE=no-such-profile", "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent"},
			"aws configuration", "no-such-profile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(exe, "run-failing")
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "AWS_REGION=us-east-1"}, c.env...)
			out, err := cmd.Output()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit = %v, want status 2; stdout %s", err, out)
			}
			var line map[string]any
			if err := json.Unmarshal(out, &line); err != nil {
				t.Fatalf("stdout %q: %v", out, err)
			}
			if line["level"] != "ERROR" || line["message"] != c.msg || line["function"] != "sweeper" || !strings.Contains(line["error"].(string), c.err) {
				t.Errorf("logged %v, want an ERROR %q of the sweeper naming %q", line, c.msg, c.err)
			}
		})
	}
}
