package account

import (
	"fmt"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestControls: encryption in each store's form and tags within the
// stores' limits are accepted; anything else is refused naming the field
// and the value.
func TestControls(t *testing.T) {
	t.Parallel()
	s3 := func(f func(*Destination)) Account { a := valid(); f(&a.Destination); return a }
	gcs := func(f func(*Destination)) Account {
		a := valid()
		a.Destination = Destination{StoreKind: StoreGCS, Bucket: "acme-exports", GCS: fedGCS}
		f(&a.Destination)
		return a
	}
	az := func(f func(*Destination)) Account {
		a := valid()
		a.Destination = Destination{StoreKind: StoreAzure, Bucket: "acme-exports", StorageAccount: "acmedata", Azure: fedAzure}
		f(&a.Destination)
		return a
	}
	const kmsARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	const gcsKey = "projects/acme-data/locations/europe-west1/keyRings/daybook/cryptoKeys/exports"
	for _, a := range []Account{
		s3(func(d *Destination) { d.Encryption = &Encryption{KMSKey: kmsARN} }),
		s3(func(d *Destination) {
			d.Encryption = &Encryption{Type: EncryptionSSEKMS, KMSKey: "arn:aws:kms:eu-west-1:123456789012:alias/daybook"}
		}),
		s3(func(d *Destination) { d.Encryption = &Encryption{Type: EncryptionSSES3} }),
		gcs(func(d *Destination) { d.Encryption = &Encryption{KMSKey: gcsKey} }),
		az(func(d *Destination) { d.Encryption = &Encryption{Scope: "daybookexports"} }),
		s3(func(d *Destination) {
			d.Tags = map[string]string{"retention": "7y", "cost-center": "data eng", "owner": "ops@acme.example", "a+b=c.d_e:f/g": ""}
		}),
	} {
		if err := a.Validate(datasettest.Example(t), testRules); err != nil {
			t.Errorf("%+v: %v", a.Destination, err)
		}
	}
	many := map[string]string{}
	for i := range MaxTags + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, tc := range []struct {
		name                 string
		a                    Account
		field, value, reason string
	}{
		{"sse-kms without a key", s3(func(d *Destination) { d.Encryption = &Encryption{Type: EncryptionSSEKMS} }), "destination.encryption.kms_key", "", "required with sse-kms"},
		{"a key id, not an ARN", s3(func(d *Destination) { d.Encryption = &Encryption{KMSKey: "1234abcd"} }), "destination.encryption.kms_key", "1234abcd", "a KMS key ARN"},
		{"sse-s3 with a key", s3(func(d *Destination) { d.Encryption = &Encryption{Type: EncryptionSSES3, KMSKey: kmsARN} }), "destination.encryption.kms_key", kmsARN, "the type is sse-s3"},
		{"unknown type", s3(func(d *Destination) { d.Encryption = &Encryption{Type: "aes"} }), "destination.encryption.type", "aes", "want sse-kms"},
		{"scope on s3", s3(func(d *Destination) { d.Encryption = &Encryption{Type: EncryptionSSES3, Scope: "x1y"} }), "destination.encryption.scope", "x1y", "applies to store azure"},
		{"gcs: an S3 key", gcs(func(d *Destination) { d.Encryption = &Encryption{KMSKey: kmsARN} }), "destination.encryption.kms_key", kmsARN, "a Cloud KMS key"},
		{"gcs: a type", gcs(func(d *Destination) { d.Encryption = &Encryption{KMSKey: gcsKey, Type: EncryptionSSES3} }), "destination.encryption.type", "sse-s3", "applies to store s3"},
		{"azure: no scope", az(func(d *Destination) { d.Encryption = &Encryption{} }), "destination.encryption.scope", "", "required with store azure"},
		{"azure: a key", az(func(d *Destination) { d.Encryption = &Encryption{Scope: "s1x", KMSKey: gcsKey} }), "destination.encryption.kms_key", gcsKey, "the scope names the key"},
		{"eleven tags", s3(func(d *Destination) { d.Tags = many }), "destination.tags", "", "11 tags, more than the 10"},
		{"long key", s3(func(d *Destination) { d.Tags = map[string]string{strings.Repeat("k", 129): "v"} }), "destination.tags", strings.Repeat("k", 129), "1 to 128"},
		{"long value", s3(func(d *Destination) { d.Tags = map[string]string{"k": strings.Repeat("v", 257)} }), "destination.tags.k", strings.Repeat("v", 257), "at most 256"},
		{"bad character", s3(func(d *Destination) { d.Tags = map[string]string{"team": "data;eng"} }), "destination.tags.team", "data;eng", "letters, digits, spaces"},
		{"aws: prefix", s3(func(d *Destination) { d.Tags = map[string]string{"aws:x": "v"} }), "destination.tags", "aws:x", "AWS's own"},
		{"azure: @", az(func(d *Destination) { d.Tags = map[string]string{"owner": "ops@acme"} }), "destination.tags.owner", "ops@acme", "take no @"},
		{"gcs: daybook- key", gcs(func(d *Destination) { d.Tags = map[string]string{"daybook-sha256": "x"} }), "destination.tags", "daybook-sha256", "daybook's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantField(t, tc.a.Validate(datasettest.Example(t), testRules), tc.field, tc.value, tc.reason)
		})
	}
}
