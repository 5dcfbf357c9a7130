package account

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Encryption is how every object of a destination is encrypted at rest,
// each store its own way:
//   - s3: Type sse-kms (SSE-KMS with KMSKey, a KMS key ARN, and an S3
//     Bucket Key; the default when KMSKey is set) or sse-s3 (AES256, S3's
//     own keys);
//   - gcs: KMSKey, a Cloud KMS key
//     (projects/P/locations/L/keyRings/R/cryptoKeys/K), the object's
//     customer-managed key;
//   - azure: Scope, an encryption scope of the storage account (which
//     names the customer's key in Key Vault).
type Encryption struct {
	Type   string `json:"type,omitempty"`
	KMSKey string `json:"kms_key,omitempty"`
	Scope  string `json:"scope,omitempty"`
}

// The S3 encryption types of Encryption.Type.
const (
	EncryptionSSEKMS = "sse-kms"
	EncryptionSSES3  = "sse-s3"
)

// S3Type is the S3 encryption type: Type, or sse-kms when a key is named.
func (e Encryption) S3Type() string {
	if e.Type == "" && e.KMSKey != "" {
		return EncryptionSSEKMS
	}
	return e.Type
}

// MaxTags is the most tags a destination may set: S3's and Azure's limit
// per object.
const MaxTags = 10

var (
	kmsKeyARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key/[A-Za-z0-9-]{1,128}|alias/[A-Za-z0-9/_-]{1,250})$`)
	gcsKeyRE    = regexp.MustCompile(`^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/locations/[a-z0-9-]{1,63}/keyRings/[A-Za-z0-9_-]{1,63}/cryptoKeys/[A-Za-z0-9_-]{1,63}$`)
	scopeRE     = regexp.MustCompile(`^[A-Za-z0-9]{3,63}$`)
	// tagCharsRE: S3's tag characters (letters, digits, spaces and
	// + - = . _ : / @); Azure's index tags take all of them but @.
	tagCharsRE = regexp.MustCompile(`^[\p{L}\p{N} +\-=._:/@]*$`)
)

// checkControls checks the encryption and the tags against the store's
// rules.
func (d Destination) checkControls(p *problems) {
	kind := d.Kind()
	if e := d.Encryption; e != nil {
		switch kind {
		case StoreS3:
			switch e.S3Type() {
			case EncryptionSSEKMS:
				if !kmsKeyARNRE.MatchString(e.KMSKey) {
					p.add("destination.encryption.kms_key", e.KMSKey, "required with sse-kms: a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>, or an alias ARN)")
				}
			case EncryptionSSES3:
				if e.KMSKey != "" {
					p.add("destination.encryption.kms_key", e.KMSKey, "goes with type sse-kms, and the type is sse-s3 (S3's own keys)")
				}
			default:
				p.add("destination.encryption.type", e.Type, "want sse-kms (with kms_key) or sse-s3")
			}
			if e.Scope != "" {
				p.add("destination.encryption.scope", e.Scope, "applies to store azure, and the store is s3")
			}
		case StoreGCS:
			if !gcsKeyRE.MatchString(e.KMSKey) {
				p.add("destination.encryption.kms_key", e.KMSKey, "required with store gcs: a Cloud KMS key (projects/<project>/locations/<location>/keyRings/<ring>/cryptoKeys/<key>)")
			}
			if e.Type != "" {
				p.add("destination.encryption.type", e.Type, "applies to store s3, and the store is gcs")
			}
			if e.Scope != "" {
				p.add("destination.encryption.scope", e.Scope, "applies to store azure, and the store is gcs")
			}
		case StoreAzure:
			if !scopeRE.MatchString(e.Scope) {
				p.add("destination.encryption.scope", e.Scope, "required with store azure: an encryption scope of the storage account (3 to 63 letters and digits)")
			}
			if e.Type != "" {
				p.add("destination.encryption.type", e.Type, "applies to store s3, and the store is azure")
			}
			if e.KMSKey != "" {
				p.add("destination.encryption.kms_key", e.KMSKey, "applies to stores s3 and gcs; on azure the scope names the key")
			}
		}
	}
	if len(d.Tags) > MaxTags {
		p.add("destination.tags", "", "%d tags, more than the %d an object may carry", len(d.Tags), MaxTags)
	}
	keys := make([]string, 0, len(d.Tags))
	for k := range d.Tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := d.Tags[k]
		field := "destination.tags." + k
		switch n := utf8.RuneCountInString(k); {
		case !utf8.ValidString(k) || n == 0 || n > 128:
			p.add("destination.tags", k, "a tag key is 1 to 128 characters")
			continue
		case !tagCharsRE.MatchString(k):
			p.add("destination.tags", k, "a tag key takes letters, digits, spaces and + - = . _ : / @ only")
			continue
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			p.add("destination.tags", k, "the aws: prefix is AWS's own")
			continue
		case kind == StoreAzure && strings.Contains(k, "@"):
			p.add("destination.tags", k, "Azure's blob index tags take no @")
			continue
		case kind == StoreGCS && strings.HasPrefix(strings.ToLower(k), "daybook-"):
			p.add("destination.tags", k, "on gcs tags are object metadata, and daybook- keys are daybook's own")
			continue
		}
		switch {
		case !utf8.ValidString(v) || utf8.RuneCountInString(v) > 256:
			p.add(field, v, "a tag value is at most 256 characters")
		case !tagCharsRE.MatchString(v):
			p.add(field, v, "a tag value takes letters, digits, spaces and + - = . _ : / @ only")
		case kind == StoreAzure && strings.Contains(v, "@"):
			p.add(field, v, "Azure's blob index tags take no @")
		}
	}
}
