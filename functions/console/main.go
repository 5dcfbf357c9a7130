// Command console is the web console Lambda, served behind a function URL
// with AWS_IAM auth: the pages of shared/console over the deployment's
// ledger, jobs queue and the accounts' buckets, read-only unless
// CONSOLE_ACTIONS is true. This file only wires.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/console"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/logging"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/startup"
)

func main() {
	startup.Run("console", func(_ context.Context, awsCfg aws.Config) (any, *slog.Logger, error) {
		fn, err := build(os.Environ(), Options{AWS: awsCfg, Now: time.Now, Rand: rand.Reader, Stdout: os.Stdout})
		return console.FunctionURLHandler(fn.Handler), fn.Log, err
	})
}

// Options are what the function's environment does not say. main passes
// the real ones (the SDK's default configuration, the system clock,
// crypto/rand, stdout); a test passes its own and gets the handler main
// serves.
type Options struct {
	AWS    aws.Config
	Now    func() time.Time
	Rand   io.Reader // the cross-site request tokens
	Stdout io.Writer // the logs
	// Tokens are where GCS and Azure credentials come from (the zero
	// value, as main passes it: Google's and Entra ID's own; a test's
	// fakes otherwise).
	Tokens destination.TokenEndpoints
}

// Function is the function as main starts it.
type Function struct {
	Handler http.Handler
	Config  Config
	Log     *slog.Logger
}

// build is the function main serves: its configuration read once from
// environ (os.Environ), the catalog, and the console over the ledger, the
// accounts' buckets (S3, GCS and Azure, with the store credentials the
// exporter has, read-only) and (with CONSOLE_ACTIONS) the jobs queue, every
// client from o.AWS. Errors name the variable; Log is set even then.
func build(environ []string, o Options) (Function, error) {
	env := envvar.Environ(environ)
	cfg, err := loadConfig(env)
	log := logging.ForFunction(o.Stdout, cfg.LogLevel, "console")
	fn := Function{Config: cfg, Log: log}
	if err != nil {
		return fn, fmt.Errorf("configuration: %w", err)
	}
	cat, err := dataset.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }) // DAYBOOK_CATALOG, or the shipped example
	if err != nil {
		return fn, fmt.Errorf("catalog: %w", err)
	}
	cfg.Ledger.Catalog, cfg.Ledger.Now = cat, o.Now
	led, err := ledger.New(dynamodb.NewFromConfig(o.AWS), cfg.Ledger)
	if err != nil {
		return fn, fmt.Errorf("ledger: %w", err)
	}
	clients := &destination.Clients{Base: o.AWS, Now: o.Now, Endpoints: netguard.Policy{
		AllowPrivate: cfg.Rules.AllowPrivateEndpoints, AllowLoopback: cfg.Local,
	},
		// It only reads manifests: sessions in customer roles may do nothing else.
		SessionPolicy: destination.ReadObjectsPolicy, DeploymentAccountID: cfg.Rules.DeploymentAccountID}
	// GCS and Azure destinations, as the exporter reaches them: federation
	// from the function's own AWS identity, or keys from Secrets Manager
	// under the deployment's secret pattern. Impersonating a GCS service
	// account (or with its key) the console asks for a read-only token,
	// as its S3 sessions carry ReadObjectsPolicy.
	clients.SetStoreCredentials(cfg.Rules.SecretPattern, o.Tokens)
	clients.GCSCredentials.Scope = gcpauth.ReadOnlyScope
	c := console.Config{
		Catalog: cat, Ledger: ops.LedgerOf(led), Buckets: console.DestinationBuckets(clients, cfg.Rules.DeploymentAccountID),
		Stage: cfg.Stage, SettleDelay: cfg.SettleDelay, Deployment: "daybook-" + cfg.Stage,
		ReadOnly: !cfg.Actions, Identity: console.IdentityFromContext, Secure: true, Now: o.Now, Rand: o.Rand, Log: log,
	}
	if cfg.Actions {
		c.Queue, c.QueueURL = sqs.NewFromConfig(o.AWS), cfg.QueueURL
	}
	if fn.Handler, err = console.New(c); err != nil {
		return fn, fmt.Errorf("console: %w", err)
	}
	return fn, nil
}
