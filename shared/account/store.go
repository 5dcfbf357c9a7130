package account

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Store names, in one canonical form, the object store a destination writes
// to, so that two spellings of one store compare equal when accounts are
// checked against each other (CheckIsolation, Guards). The same bucket name
// on two stores is two buckets; on one store, one bucket.
//
//   - AWS S3 is StoreAWS (StoreAWSChina in the China partition, whose bucket
//     names are a namespace of their own): the empty endpoint whatever the
//     region, and any endpoint on an AWS host (s3.amazonaws.com,
//     s3.<region>.amazonaws.com, s3-<region>.amazonaws.com, ...), since
//     every AWS region shares one bucket namespace.
//   - A custom endpoint is "endpoint <host>:<port>": the host lowercased,
//     without a trailing dot, an IPv4-mapped IPv6 address as IPv4, the port
//     the scheme's default (80, 443) when none is given, written without
//     leading zeros. Every loopback name (localhost, 127.0.0.0/8, ::1, and
//     the unspecified addresses 0.0.0.0 and ::, which reach this host) is
//     one host, "loopback": they all reach the same local server.
//
// An endpoint that is not a URL is "endpoint " followed by it as written.
func (d Destination) Store() string {
	if d.Endpoint == "" {
		if strings.HasPrefix(d.Region, "cn-") {
			return StoreAWSChina
		}
		return StoreAWS
	}
	u, err := url.Parse(strings.TrimSpace(d.Endpoint))
	if err != nil || u.Host == "" {
		return "endpoint " + d.Endpoint
	}
	host := strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	switch {
	case strings.HasSuffix(host, ".amazonaws.com.cn"):
		return StoreAWSChina
	case isAWSHost(host):
		return StoreAWS
	}
	port := u.Port()
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.WithZone("").Unmap()
		host = ip.String()
		if ip.IsLoopback() || ip.IsUnspecified() {
			host = "loopback"
		}
	} else if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		host = "loopback"
	}
	return "endpoint " + host + ":" + port
}

// The AWS stores of Destination.Store.
const (
	StoreAWS      = "aws"
	StoreAWSChina = "aws-cn"
)
