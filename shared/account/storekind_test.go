package account

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestStoreKind: an account saved without a store is on S3, and each store
// takes its own names and refuses what only S3 takes, naming the field and
// the value.
func TestStoreKind(t *testing.T) {
	t.Parallel()
	var d Destination
	if err := json.Unmarshal([]byte(`{"bucket":"acme-exports"}`), &d); err != nil || d.Kind() != StoreS3 {
		t.Fatalf("an account record without store: kind %q, %v", d.Kind(), err)
	}
	gcs := func(f func(*Destination)) Account {
		a := valid()
		a.Destination = Destination{StoreKind: StoreGCS, Bucket: "acme_exports.eu", GCS: fedGCS}
		f(&a.Destination)
		return a
	}
	az := func(f func(*Destination)) Account {
		a := valid()
		a.Destination = Destination{StoreKind: StoreAzure, Bucket: "acme-exports", StorageAccount: "acmedata", Azure: fedAzure}
		f(&a.Destination)
		return a
	}
	for _, a := range []Account{gcs(func(*Destination) {}), az(func(*Destination) {})} {
		if err := a.Validate(datasettest.Example(t), testRules); err != nil {
			t.Errorf("valid %s destination: %v", a.Destination.Kind(), err)
		}
		if owner, err := a.Destination.BucketOwner(deployment); owner != "" || err != nil {
			t.Errorf("%s destination's bucket owner = %q, %v; want none", a.Destination.Kind(), owner, err)
		}
	}
	for _, tc := range []struct {
		name                 string
		a                    Account
		field, value, reason string
	}{
		{"unknown store", gcs(func(d *Destination) { d.StoreKind = "r2" }), "destination.store", "r2", "want s3 (the default), gcs or azure"},
		{"gcs: upper case", gcs(func(d *Destination) { d.Bucket = "Acme" }), "destination.bucket", "Acme", "not a GCS bucket name"},
		{"gcs: google", gcs(func(d *Destination) { d.Bucket = "my-google-data" }), "destination.bucket", "my-google-data", `contain "google"`},
		{"gcs: 64 without dots", gcs(func(d *Destination) { d.Bucket = strings.Repeat("a", 64) }), "destination.bucket", strings.Repeat("a", 64), "longer than 63"},
		{"gcs: role", gcs(func(d *Destination) { d.RoleARN = "arn:aws:iam::123456789012:role/daybook-export-x" }), "destination.role_arn",
			"arn:aws:iam::123456789012:role/daybook-export-x", "applies to store s3, and the store is gcs"},
		{"gcs: region", gcs(func(d *Destination) { d.Region = "eu-west-1" }), "destination.region", "eu-west-1", "applies to store s3"},
		{"gcs: checksums", gcs(func(d *Destination) { d.Checksums = ChecksumsNone }), "destination.checksums", "none", "applies to store s3"},
		{"gcs: storage account", gcs(func(d *Destination) { d.StorageAccount = "acmedata" }), "destination.storage_account", "acmedata", "applies to store azure"},
		{"gcs: glue", gcs(func(d *Destination) { d.TableFormat = TableFormatIceberg; d.Glue = &GlueTables{Database: "db"} }), "destination.glue.database", "db", "reads S3 only"},
		{"azure: no account", az(func(d *Destination) { d.StorageAccount = "" }), "destination.storage_account", "", "required with store azure"},
		{"azure: account name", az(func(d *Destination) { d.StorageAccount = "Acme-Data" }), "destination.storage_account", "Acme-Data", "3 to 24 lowercase letters and digits"},
		{"azure: double hyphen", az(func(d *Destination) { d.Bucket = "acme--exports" }), "destination.bucket", "acme--exports", "not an Azure container name"},
		{"azure: dot", az(func(d *Destination) { d.Bucket = "acme.exports" }), "destination.bucket", "acme.exports", "not an Azure container name"},
		{"azure: owner", az(func(d *Destination) { d.ExpectedBucketOwner = "123456789012" }), "destination.expected_bucket_owner", "123456789012", "the store is azure"},
		{"azure: Azure's own endpoint", az(func(d *Destination) { d.Endpoint = "https://acmedata.blob.core.windows.net" }), "destination.endpoint",
			"https://acmedata.blob.core.windows.net", "is Azure's own endpoint, which destination.storage_account already names"},
		{"s3: storage account", func() Account { a := valid(); a.Destination.StorageAccount = "acmedata"; return a }(), "destination.storage_account", "acmedata", "applies to store azure, and the store is s3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantField(t, tc.a.Validate(datasettest.Example(t), testRules), tc.field, tc.value, tc.reason)
		})
	}
}
