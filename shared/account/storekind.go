package account

import (
	"fmt"
	"regexp"
	"strings"
)

// StoreKind is the object store a destination writes to.
type StoreKind string

// The stores of Destination.StoreKind.
const (
	// StoreS3 is Amazon S3 and S3-compatible stores (the default).
	StoreS3 StoreKind = "s3"
	// StoreGCS is Google Cloud Storage: Bucket is a GCS bucket.
	StoreGCS StoreKind = "gcs"
	// StoreAzure is Azure Blob Storage: Bucket is a container in the
	// storage account StorageAccount (ADLS Gen2 accounts included).
	StoreAzure StoreKind = "azure"
)

// StoreKinds are the stores, in the order help text names them.
var StoreKinds = []StoreKind{StoreS3, StoreGCS, StoreAzure}

// Kind is the destination's store: StoreKind, or StoreS3 when it is empty
// (every account saved before there were other stores).
func (d Destination) Kind() StoreKind {
	if d.StoreKind == "" {
		return StoreS3
	}
	return d.StoreKind
}

var (
	// gcsBucketRE is a GCS bucket name: 3 to 63 characters of lowercase
	// letters, digits, hyphens and underscores, or up to 222 with dots, each
	// dot-separated component at most 63; starting and ending with a letter
	// or digit (https://cloud.google.com/storage/docs/buckets#naming).
	gcsBucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
	// containerRE is an Azure container name: 3 to 63 lowercase letters,
	// digits and hyphens, starting with a letter or digit, no two hyphens
	// in a row (checked apart).
	containerRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	// storageAccountRE is an Azure storage account name: 3 to 24 lowercase
	// letters and digits.
	storageAccountRE = regexp.MustCompile(`^[a-z0-9]{3,24}$`)
)

// checkStore checks the store and what only some stores take: a GCS
// bucket or Azure container name, the storage account, and the S3-only
// fields on another store.
func (d Destination) checkStore(p *problems) {
	switch d.Kind() {
	case StoreS3:
		if d.StorageAccount != "" {
			p.add("destination.storage_account", d.StorageAccount, "applies to store azure, and the store is s3")
		}
		return
	case StoreGCS:
		if why := gcsBucketProblem(d.Bucket); why != "" {
			p.add("destination.bucket", d.Bucket, "not a GCS bucket name: %s", why)
		}
		if d.StorageAccount != "" {
			p.add("destination.storage_account", d.StorageAccount, "applies to store azure, and the store is gcs")
		}
	case StoreAzure:
		if !containerRE.MatchString(d.Bucket) || strings.Contains(d.Bucket, "--") {
			p.add("destination.bucket", d.Bucket, "not an Azure container name (3 to 63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit)")
		}
		if !storageAccountRE.MatchString(d.StorageAccount) {
			p.add("destination.storage_account", d.StorageAccount, "required with store azure: the storage account's name, 3 to 24 lowercase letters and digits")
		}
		if d.Endpoint != "" && isAzureHost(d.Endpoint) {
			p.add("destination.endpoint", d.Endpoint, "is Azure's own endpoint, which destination.storage_account already names: leave endpoint empty (it is for an emulator or Azure Stack, path-style)")
		}
	default:
		p.add("destination.store", string(d.StoreKind), "want s3 (the default), gcs or azure")
		return
	}
	// S3's own settings mean nothing on another store: refused, not ignored.
	store := string(d.Kind())
	for _, f := range []struct{ field, value string }{
		{"destination.region", d.Region},
		{"destination.role_arn", d.RoleARN},
		{"destination.external_id", d.ExternalID},
		{"destination.expected_bucket_owner", d.ExpectedBucketOwner},
		{"destination.checksums", d.Checksums},
	} {
		if f.value != "" {
			p.add(f.field, f.value, "applies to store s3, and the store is %s", store)
		}
	}
	if d.Glue != nil {
		p.add("destination.glue.database", d.Glue.Database, "registers tables in AWS Glue, which reads S3 only, and the store is %s", store)
	}
}

// gcsBucketProblem says what is wrong with a GCS bucket name, or "".
func gcsBucketProblem(name string) string {
	switch {
	case !gcsBucketRE.MatchString(name):
		return "want 3 to 63 lowercase letters, digits, hyphens and underscores (up to 222 with dots), starting and ending with a letter or digit"
	case !strings.Contains(name, ".") && len(name) > 63:
		return "longer than 63 characters without dots"
	case strings.HasPrefix(name, "goog") || strings.Contains(name, "google") || strings.Contains(name, "g00gle"):
		return `may not begin with "goog" or contain "google"`
	case strings.Contains(name, ".."):
		return "two dots in a row"
	}
	for _, c := range strings.Split(name, ".") {
		if len(c) > 63 {
			return fmt.Sprintf("dot-separated part %q is longer than 63 characters", c)
		}
	}
	return ""
}

// URI is key's location in the destination as its store's readers name it:
// s3://bucket/key, gs://bucket/key, or on Azure the ABFS URI
// abfss://container@account.dfs.core.windows.net/key (the bucket drivers'
// URIs, which destination's tests hold equal).
func (d Destination) URI(key string) string {
	switch d.Kind() {
	case StoreGCS:
		return "gs://" + d.Bucket + "/" + key
	case StoreAzure:
		return "abfss://" + d.Bucket + "@" + d.StorageAccount + ".dfs.core.windows.net/" + key
	}
	return "s3://" + d.Bucket + "/" + key
}
