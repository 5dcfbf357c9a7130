package account

import (
	"net/url"
	"strings"
)

// Place is where a destination's objects live, in the canonical form the
// isolation rule compares (CheckIsolation, Guards): the namespace its
// bucket name is unique in, and the bucket. It follows destination.store
// and the store's identity fields:
//
//   - s3: Store (AWS, AWS China, or a custom endpoint's host and port) and
//     the bucket: exactly what the rule compared before other stores
//     existed, so the guard items of every stored S3 account keep their
//     keys.
//   - gcs: "gcs" (one global bucket namespace; an endpoint on
//     googleapis.com, such as a Private Service Connect one, is Google's
//     too) and the bucket; on another custom endpoint (an emulator), "gcs "
//     and the endpoint's canonical host and port.
//   - azure: "azure " and the storage account, lowercased (a container
//     name is unique only in its account), and the container; on a custom
//     endpoint (an emulator or Azure Stack, path-style), "azure ", the
//     endpoint's canonical host and port, "/" and the storage account.
//
// A bucket of one store never collides with a bucket of another, however
// they are named: an S3 bucket named like a GCS bucket is another bucket.
type Place struct {
	Namespace string
	Bucket    string
}

// Place returns the destination's canonical place (see Place).
func (d Destination) Place() Place {
	switch d.Kind() {
	case StoreGCS:
		ns := string(StoreGCS)
		if d.Endpoint != "" && !isGoogleHost(d.Endpoint) {
			ns += " " + strings.TrimPrefix(d.Store(), "endpoint ")
		}
		return Place{Namespace: ns, Bucket: d.Bucket}
	case StoreAzure:
		acct := strings.ToLower(d.StorageAccount)
		if d.Endpoint != "" && !isAzureHost(d.Endpoint) {
			acct = strings.TrimPrefix(d.Store(), "endpoint ") + "/" + acct
		}
		return Place{Namespace: string(StoreAzure) + " " + acct, Bucket: d.Bucket}
	}
	return Place{Namespace: d.Store(), Bucket: d.Bucket}
}

// String is the place as the isolation errors name it.
func (p Place) String() string {
	switch {
	case strings.HasPrefix(p.Namespace, string(StoreAzure)+" "):
		return "container " + p.Bucket + " of storage account " + strings.TrimPrefix(p.Namespace, string(StoreAzure)+" ")
	case p.Namespace == string(StoreGCS) || strings.HasPrefix(p.Namespace, string(StoreGCS)+" "):
		return "GCS bucket " + p.Bucket
	}
	return "bucket " + p.Bucket
}

// endpointHost is the lowercased host of an endpoint URL, "" when it is not
// one.
func endpointHost(endpoint string) string {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil {
		return ""
	}
	return strings.TrimRight(strings.ToLower(u.Hostname()), ".")
}

// isGoogleHost: the endpoint is Google's (googleapis.com or a host under
// it, as Private Service Connect endpoints are).
func isGoogleHost(endpoint string) bool {
	h := endpointHost(endpoint)
	return h == "googleapis.com" || strings.HasSuffix(h, ".googleapis.com")
}

// isAzureHost: the endpoint is an Azure Storage service of the public
// cloud (<account>.blob.core.windows.net, .dfs.core.windows.net, ...),
// where the storage account, not the endpoint, says which account it is.
func isAzureHost(endpoint string) bool {
	return strings.HasSuffix(endpointHost(endpoint), ".core.windows.net")
}
