// Package awsclient is the one place AWS SDK clients are built. Endpoints come
// only from the SDK's standard configuration (AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE>), so the same binary talks to AWS, moto,
// LocalStack or MinIO without a branch in business code.
package awsclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Load reads the default AWS configuration (env, shared files, container or
// Lambda role). Checksums are only calculated when an operation requires
// them: daybook computes CRC32C itself and S3-compatible stores differ in
// what they accept for the newer default.
func Load(ctx context.Context, opts ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts = append([]func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}, opts...)
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	return cfg, nil
}

// S3Options returns the S3 client options for cfg: path-style addressing
// whenever a custom endpoint is configured, since emulators and most
// S3-compatible stores do not serve virtual-hosted buckets.
func S3Options(cfg aws.Config) func(*s3.Options) {
	custom := cfg.BaseEndpoint != nil || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	return func(o *s3.Options) {
		if custom {
			o.UsePathStyle = true
		}
	}
}

// NewS3 builds an S3 client from cfg with S3Options applied.
func NewS3(cfg aws.Config, opts ...func(*s3.Options)) *s3.Client {
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){S3Options(cfg)}, opts...)...)
}

// LocalAccountID is the AWS account every resource of a local stack (moto
// on this machine) lives in: moto's default account, which answers every
// call made with its test credentials. A local stack's DEPLOYMENT_ACCOUNT_ID
// is this value.
const LocalAccountID = "123456789012"

// Local reports whether the SDK's endpoint, AWS_ENDPOINT_URL read through
// lookup (os.LookupEnv), is on this machine (localhost or a loopback
// address): a local stack (moto, the Lambda runtime emulator). It never is
// in AWS, where the variable is unset. Only then may a destination's custom
// endpoint be on a loopback address (netguard.Policy.AllowLoopback).
func Local(lookup func(string) (string, bool)) bool {
	v, _ := lookup("AWS_ENDPOINT_URL")
	_, _, ok := Loopback(v)
	return ok
}

// Loopback reports whether endpoint (a URL) is on this machine, localhost or
// a loopback address, and its host and port (the scheme's when it names
// none).
func Loopback(endpoint string) (host, port string, ok bool) {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil || u.Host == "" {
		return "", "", false
	}
	host = u.Hostname()
	if ip, err := netip.ParseAddr(host); host != "localhost" && (err != nil || !ip.IsLoopback()) {
		return "", "", false
	}
	port = u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	return host, port, true
}

// ErrLocalDown is a local stack that does not answer.
var ErrLocalDown = errors.New("the local stack is not running: make local-up")

// Probe fails fast with ErrLocalDown when endpoint is on this machine
// (Loopback) and nothing answers there within two seconds, instead of an
// SDK retry loop ending in "connection refused"; any other endpoint
// (remote, or empty: the SDK's own) is not probed. dial is net.Dialer's
// DialContext, or a test's.
func Probe(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), endpoint string) error {
	host, port, ok := Loopback(endpoint)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("%w (nothing answers at %s)", ErrLocalDown, endpoint)
	}
	return c.Close()
}
