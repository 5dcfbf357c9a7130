// Command console is the web console Lambda, served behind a function URL
// with AWS_IAM auth: the pages of shared/console over the deployment's
// ledger, jobs queue and the accounts' buckets, read-only unless
// CONSOLE_ACTIONS is true. This file only wires.
package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/console"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/logging"
	"github.com/daybook-dev/daybook/shared/netguard"
)

func main() {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := loadConfig(env)
	log := logging.New(os.Stdout, logging.ParseLevel(cfg.LogLevel)).With("function", "console")
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(2)
	}
	cat, err := dataset.FromEnv(os.LookupEnv) // DAYBOOK_CATALOG, or the shipped example
	if err != nil {
		log.Error("catalog", "error", err.Error())
		os.Exit(2)
	}
	dataset.Use(cat)
	awsCfg, err := awsclient.Load(context.Background())
	if err != nil {
		log.Error("aws configuration", "error", err.Error())
		os.Exit(2)
	}
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), cfg.Ledger)
	if err != nil {
		log.Error("ledger", "error", err.Error())
		os.Exit(2)
	}
	clients := &destination.Clients{Base: awsCfg, Endpoints: netguard.Policy{AllowPrivate: cfg.Rules.AllowPrivateEndpoints},
		// It only reads manifests: sessions in customer roles may do nothing else.
		SessionPolicy: destination.ReadObjectsPolicy, DeploymentAccountID: cfg.Rules.DeploymentAccountID}
	c := console.Config{
		Ledger: led, Buckets: console.DestinationBuckets(clients, cfg.Rules.DeploymentAccountID),
		Stage: cfg.Stage, SettleDelay: cfg.SettleDelay, Deployment: "daybook-" + cfg.Stage,
		ReadOnly: !cfg.Actions, Identity: console.IdentityFromContext, Secure: true, Now: time.Now, Log: log,
	}
	if cfg.Actions {
		c.Queue, c.QueueURL = sqs.NewFromConfig(awsCfg), cfg.QueueURL
	}
	srv, err := console.New(c)
	if err != nil {
		log.Error("console", "error", err.Error())
		os.Exit(2)
	}
	lambda.Start(console.FunctionURLHandler(srv))
}
