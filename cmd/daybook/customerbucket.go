package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/oauth2/google"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
)

// bucketLoc is a bucket as a customer names it to verify --bucket.
type bucketLoc struct {
	kind           account.StoreKind
	bucket         string // the S3 or GCS bucket, or the Azure container
	storageAccount string // Azure
}

var (
	azureRE = regexp.MustCompile(`^az://([a-z0-9]{3,24})(?:\.blob\.core\.windows\.net)?/([a-z0-9-]{3,63})/?$`)
	abfssRE = regexp.MustCompile(`^abfss://([a-z0-9-]{3,63})@([a-z0-9]{3,24})\.dfs\.core\.windows\.net/?$`)
)

// parseBucketFlag reads a bucket's name: NAME or s3://NAME (S3), gs://NAME
// (GCS), az://ACCOUNT/CONTAINER, az://ACCOUNT.blob.core.windows.net/CONTAINER
// or abfss://CONTAINER@ACCOUNT.dfs.core.windows.net (Azure).
func parseBucketFlag(s string) (bucketLoc, error) {
	switch {
	case strings.HasPrefix(s, "gs://"):
		name := strings.TrimSuffix(strings.TrimPrefix(s, "gs://"), "/")
		if name == "" || strings.Contains(name, "/") {
			return bucketLoc{}, errors.New("want gs://BUCKET")
		}
		return bucketLoc{kind: account.StoreGCS, bucket: name}, nil
	case strings.HasPrefix(s, "az://"):
		m := azureRE.FindStringSubmatch(s)
		if m == nil {
			return bucketLoc{}, errors.New("want az://ACCOUNT/CONTAINER (the storage account, then the container)")
		}
		return bucketLoc{kind: account.StoreAzure, storageAccount: m[1], bucket: m[2]}, nil
	case strings.HasPrefix(s, "abfss://"):
		m := abfssRE.FindStringSubmatch(s)
		if m == nil {
			return bucketLoc{}, errors.New("want abfss://CONTAINER@ACCOUNT.dfs.core.windows.net")
		}
		return bucketLoc{kind: account.StoreAzure, bucket: m[1], storageAccount: m[2]}, nil
	}
	name := strings.TrimSuffix(strings.TrimPrefix(s, "s3://"), "/")
	if name == "" || strings.Contains(name, "/") || strings.Contains(name, "://") {
		return bucketLoc{}, errors.New("want a bucket name, s3://NAME, gs://NAME or az://ACCOUNT/CONTAINER")
	}
	return bucketLoc{kind: account.StoreS3, bucket: name}, nil
}

// customerBucket opens loc for reading with the customer's own credentials,
// each store's usual chain: AWS's (--profile, --region), Google's
// Application Default Credentials, Azure's DefaultAzureCredential. At an
// emulator's endpoint GCS is read without credentials and Azure's
// development account with its documented key.
func (a *app) customerBucket(ctx context.Context, loc bucketLoc, endpoint string) (*bucket.Bucket, error) {
	switch loc.kind {
	case account.StoreGCS:
		cfg := gcs.Config{Endpoint: gcs.EndpointAt(endpoint)}
		if endpoint == "" {
			ts, err := google.DefaultTokenSource(ctx, "https://www.googleapis.com/auth/devstorage.read_only")
			if err != nil {
				return nil, fmt.Errorf("%w (reading gs://%s): %v; run gcloud auth application-default login", errNoCredentials, loc.bucket, err)
			}
			cfg.TokenSource = ts
		}
		c, err := gcs.NewClient(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return gcs.New(c, loc.bucket, gcs.Options{}), nil
	case account.StoreAzure:
		cfg := azure.Config{ServiceURL: azure.ServiceURL(loc.storageAccount), Container: loc.bucket}
		if endpoint != "" {
			cfg.ServiceURL = azure.ServiceURLAt(endpoint, loc.storageAccount)
		}
		if endpoint != "" && loc.storageAccount == azure.EmulatorAccount {
			key, err := container.NewSharedKeyCredential(azure.EmulatorAccount, azure.EmulatorKey)
			if err != nil {
				return nil, err
			}
			cfg.SharedKey = key
		} else {
			cred, err := azidentity.NewDefaultAzureCredential(nil)
			if err != nil {
				return nil, fmt.Errorf("%w (reading container %s of %s): %v; run az login", errNoCredentials, loc.bucket, loc.storageAccount, err)
			}
			cfg.Credential = cred
		}
		c, err := azure.NewContainerClient(cfg)
		if err != nil {
			return nil, err
		}
		return azure.New(c, loc.bucket, azure.Options{Account: loc.storageAccount}), nil
	}
	cfg, err := a.awsConfig(ctx, a.target.region, a.target.profile)
	if err != nil {
		return nil, err
	}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	if err := haveCredentials(ctx, cfg, "reading s3://"+loc.bucket); err != nil {
		return nil, err
	}
	return bucket.New(awsclient.NewS3(cfg), loc.bucket, bucket.Options{}), nil
}
