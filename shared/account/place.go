package account

import (
	"net/url"
	"strings"
)

// Place is where a destination's objects live, in the canonical form the
// isolation rule compares (CheckIsolation, Guards): the namespace its
// bucket name is unique in, and the bucket.
//
//   - S3: Store (AWS, AWS China, or a custom endpoint's host and port) and
//     the bucket: exactly what the rule compared before other stores
//     existed, so the guard items of every stored S3 account keep their
//     keys.
//   - GCS: "gcs" (one global bucket namespace) and the bucket; on a custom
//     endpoint (an emulator), "gcs " and the endpoint's canonical host and
//     port.
//   - Azure: "azure " and the storage account (a container name is unique
//     only in its account), and the container. The account is read from
//     the Blob or Data Lake endpoint, https://<account>.blob.core.windows.net
//     or .dfs.core.windows.net (one account, two endpoints), or, on an
//     emulator's path-style endpoint (Azurite: http://host:port/<account>),
//     from its first path segment after the canonical host and port.
//
// A bucket of one store never collides with a bucket of another, however
// they are named: an S3 bucket named like a GCS bucket is another bucket.
type Place struct {
	Namespace string
	Bucket    string
}

// Store kinds of a destination.
const (
	StoreKindS3    = "s3"
	StoreKindGCS   = "gcs"
	StoreKindAzure = "azure"
)

// StoreKind is the destination's kind of store: StoreKindGCS with a
// destination.gcs block, StoreKindAzure with destination.azure, else
// StoreKindS3.
func (d Destination) StoreKind() string {
	switch {
	case d.GCS != nil:
		return StoreKindGCS
	case d.Azure != nil:
		return StoreKindAzure
	}
	return StoreKindS3
}

// Place returns the destination's canonical place (see Place).
func (d Destination) Place() Place {
	switch d.StoreKind() {
	case StoreKindGCS:
		ns := StoreKindGCS
		if d.Endpoint != "" {
			ns += " " + strings.TrimPrefix(d.Store(), "endpoint ")
		}
		return Place{Namespace: ns, Bucket: d.Bucket}
	case StoreKindAzure:
		return Place{Namespace: StoreKindAzure + " " + azureAccount(d), Bucket: d.Bucket}
	}
	return Place{Namespace: d.Store(), Bucket: d.Bucket}
}

// azureAccount is the storage account of an Azure destination's endpoint,
// lowercased (account names are lowercase letters and digits).
func azureAccount(d Destination) string {
	u, err := url.Parse(strings.TrimSpace(d.Endpoint))
	if err != nil || u.Host == "" {
		return "endpoint " + d.Endpoint
	}
	host := strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	for _, suffix := range []string{".blob.core.windows.net", ".dfs.core.windows.net"} {
		if acct, ok := strings.CutSuffix(host, suffix); ok && !strings.Contains(acct, ".") {
			return acct
		}
	}
	first, _, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
	return strings.TrimPrefix(d.Store(), "endpoint ") + "/" + strings.ToLower(first)
}

// String is the place as the isolation errors name it.
func (p Place) String() string {
	switch {
	case strings.HasPrefix(p.Namespace, StoreKindAzure+" "):
		return "container " + p.Bucket + " of storage account " + strings.TrimPrefix(p.Namespace, StoreKindAzure+" ")
	case p.Namespace == StoreKindGCS || strings.HasPrefix(p.Namespace, StoreKindGCS+" "):
		return "GCS bucket " + p.Bucket
	}
	return "bucket " + p.Bucket
}

// AzureAccount is an Azure destination's storage account as Place reads it
// from the endpoint ("" for another store).
func (d Destination) AzureAccount() string {
	if d.StoreKind() != StoreKindAzure {
		return ""
	}
	return azureAccount(d)
}
