package account

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/netguard"
)

// Custom endpoints (C3): MinIO, R2, GCS interoperability, LocalStack.
//
// An endpoint is https://host[:port], or http:// on a loopback host
// (localhost, 127.0.0.0/8, ::1) for local development. No user, path, query
// or fragment. A literal IP is judged when the account is saved: metadata,
// link-local, unspecified, multicast and reserved addresses never; private
// ones (RFC 1918, fc00::/7, 100.64.0.0/10) only where Rules allow private
// endpoints. A hostname cannot be judged then (what it resolves to may change
// after the check: DNS rebinding), so package destination checks every
// address a client connects to with the same policy (netguard). AWS's own
// hosts are refused as custom endpoints: an AWS bucket is reached through
// the region, and a hand-written S3 host (a virtual-hosted bucket name in
// it, say) would send the writes to a bucket other than destination.bucket.

var hostLabelRE = regexp.MustCompile(`^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$`)

// awsSuffixes are the domains of AWS service endpoints.
var awsSuffixes = []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws"}

// saveTimePolicy refuses at save time what is never allowed; private
// addresses are the deployment's call (checkEndpointAddress).
var saveTimePolicy = netguard.Policy{AllowLoopback: true, AllowPrivate: true}

// parseEndpoint checks an endpoint's form and returns it parsed; the error is
// the reason in words.
func parseEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL (want https://host[:port])")
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Opaque != "" || u.Host == "" {
		return nil, errors.New("want https://host[:port]")
	}
	switch {
	case u.User != nil:
		return nil, errors.New("must not carry a user or password")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.ForceQuery, u.Fragment != "":
		return nil, errors.New("want https://host[:port] with no path, query or fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %q is not 1-65535", p)
		}
	}
	host := u.Hostname()
	ip, isIP := parseIP(host)
	switch {
	case isIP:
		if err := saveTimePolicy.Check(ip); err != nil {
			return nil, err
		}
	case !validHostname(host):
		return nil, fmt.Errorf("host %q is neither a lowercase host name nor an IP address", host)
	case isAWSHost(host):
		return nil, fmt.Errorf("host %q is an AWS endpoint: leave destination.endpoint empty and set destination.region", host)
	}
	if u.Scheme == "http" && !isLoopbackHost(host) {
		return nil, errors.New("must be https:// (http:// only on a loopback host, for local development)")
	}
	return u, nil
}

func parseIP(host string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(host)
	return ip, err == nil
}

// validHostname: lowercase DNS labels, the last starting with a letter, so
// numeric forms a resolver might read as an address (2852039166,
// 0xa9fea9fe, 0251.0376.0251.0376) are refused rather than guessed at.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 || h != strings.ToLower(h) {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	for _, l := range labels {
		if !hostLabelRE.MatchString(l) {
			return false
		}
	}
	last := labels[len(labels)-1]
	return last[0] >= 'a' && last[0] <= 'z'
}

func isAWSHost(h string) bool {
	h = strings.TrimSuffix(h, ".")
	for _, s := range awsSuffixes {
		if strings.HasSuffix(h, s) || h == s[1:] {
			return true
		}
	}
	return false
}

func isLoopbackHost(h string) bool {
	if ip, ok := parseIP(h); ok {
		return netguard.Classify(ip) == netguard.Loopback
	}
	return strings.TrimSuffix(h, ".") == "localhost"
}

// checkEndpointAddress refuses a literal private address unless allowed.
func (d Destination) checkEndpointAddress(p *problems, allowPrivate bool) {
	u, err := parseEndpoint(d.Endpoint)
	if err != nil {
		return // reported by shape
	}
	if ip, ok := parseIP(u.Hostname()); ok {
		if err := (netguard.Policy{AllowLoopback: true, AllowPrivate: allowPrivate}).Check(ip); err != nil {
			p.add("destination.endpoint", d.Endpoint, "%v", err)
		}
	}
}
