package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// Config is the console function's configuration, read once at start-up.
type Config struct {
	Stage       string
	QueueURL    string
	Ledger      ledger.Config
	SettleDelay time.Duration
	// Rules are the deployment's account rules: the expected owner of the
	// buckets daybook writes with its own role, and whether custom
	// endpoints may be private.
	Rules account.Rules
	// Local is true when the SDK's endpoint is on this machine (a local
	// stack; awsclient.Local): only then may custom endpoints (a GCS or
	// Azure emulator's) be loopback, and tokens cross plain http to them.
	Local bool
	// Actions: CONSOLE_ACTIONS is true (the template's ConsoleActions);
	// otherwise the console is read-only.
	Actions  bool
	LogLevel string
}

// loadConfig reads the function's environment (os.Environ as a map); every
// malformed variable is named in the error.
func loadConfig(env map[string]string) (Config, error) {
	r := envvar.From(env)
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c := Config{
		Stage:       r.Stage(),
		QueueURL:    r.StringOr("JOBS_QUEUE_URL", ""),
		Ledger:      ledger.ConfigFromEnv(r),
		SettleDelay: r.SettleDelay(),
		LogLevel:    r.LogLevel(),
	}
	errs := []error{r.Err()}
	rules, err := account.RulesFromEnv(lookup)
	c.Rules, c.Local = rules, awsclient.Local(lookup)
	errs = append(errs, err)
	if v, ok := lookup("CONSOLE_ACTIONS"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("environment variable CONSOLE_ACTIONS=%q: want true or false", v))
		}
		c.Actions = b
	}
	if c.Actions && c.QueueURL == "" {
		errs = append(errs, errors.New("environment variable JOBS_QUEUE_URL is not set: the console's re-export sends to it"))
	}
	return c, errors.Join(errs...)
}
