// Package netguard decides which network addresses daybook may connect to on
// a customer's behalf (C3). A custom S3 endpoint is configuration written by
// or for a tenant; without a guard, an endpoint such as http://169.254.169.254
// (or a hostname that resolves there, perhaps only after it was saved: DNS
// rebinding) turns the exporter into a proxy to the instance metadata and
// credential services or to private networks.
//
// Two places use it: account validation refuses literal IP endpoints when the
// account is saved, and package destination installs Policy.Control on the
// dialer of every client with a custom endpoint, so the address a name
// resolves to is checked when the connection is made, before any packet is
// sent. Checking only at save time would be a time-of-check/time-of-use gap.
//
// Classes and what is allowed:
//
//	public                                   always
//	loopback   127.0.0.0/8, ::1              only with Policy.AllowLoopback (local development)
//	private    10/8, 172.16/12, 192.168/16,  only with Policy.AllowPrivate (an explicit
//	           fc00::/7, 64:ff9b:1::/48       deployment setting: MinIO in a VPC, ...)
//	shared     100.64.0.0/10 (carrier-grade NAT)   only with Policy.AllowPrivate
//	metadata   169.254.169.254, 169.254.170.2, 169.254.170.23,
//	           fd00:ec2::254, fd00:ec2::23  never (instance metadata, ECS and EKS credentials)
//	link-local 169.254.0.0/16, fe80::/10    never
//	unspecified 0.0.0.0/8, ::               never (connecting to 0.0.0.0 reaches the local host)
//	multicast  224.0.0.0/4, ff00::/8        never
//	reserved   240.0.0.0/4 (with 255.255.255.255)  never
//
// Link-local, metadata, unspecified, multicast and reserved addresses are
// refused even when private endpoints are allowed: no object store is served
// from them, and the metadata addresses sit inside fc00::/7 and 169.254/16.
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) and the NAT64 well-known prefix
// (64:ff9b::/96) are judged by the IPv4 address they carry.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// Class is the kind of an address.
type Class string

// The classes.
const (
	Public      Class = "public"
	Loopback    Class = "loopback"
	Private     Class = "private"
	Shared      Class = "shared"
	Metadata    Class = "metadata"
	LinkLocal   Class = "link-local"
	Unspecified Class = "unspecified"
	Multicast   Class = "multicast"
	Reserved    Class = "reserved"
)

var (
	prefixes = []struct {
		p     netip.Prefix
		class Class
	}{
		{netip.MustParsePrefix("0.0.0.0/8"), Unspecified},
		{netip.MustParsePrefix("127.0.0.0/8"), Loopback},
		{netip.MustParsePrefix("10.0.0.0/8"), Private},
		{netip.MustParsePrefix("172.16.0.0/12"), Private},
		{netip.MustParsePrefix("192.168.0.0/16"), Private},
		{netip.MustParsePrefix("100.64.0.0/10"), Shared},
		{netip.MustParsePrefix("169.254.0.0/16"), LinkLocal},
		{netip.MustParsePrefix("224.0.0.0/4"), Multicast},
		{netip.MustParsePrefix("240.0.0.0/4"), Reserved},
		{netip.MustParsePrefix("::/128"), Unspecified},
		{netip.MustParsePrefix("::1/128"), Loopback},
		{netip.MustParsePrefix("fe80::/10"), LinkLocal},
		{netip.MustParsePrefix("fc00::/7"), Private},
		{netip.MustParsePrefix("64:ff9b:1::/48"), Private},
		{netip.MustParsePrefix("ff00::/8"), Multicast},
	}
	metadata = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true, // EC2 instance metadata (IMDS)
		netip.MustParseAddr("169.254.170.2"):   true, // ECS task credentials
		netip.MustParseAddr("169.254.170.23"):  true, // EKS Pod Identity
		netip.MustParseAddr("fd00:ec2::254"):   true, // IMDS over IPv6
		netip.MustParseAddr("fd00:ec2::23"):    true, // EKS Pod Identity over IPv6
	}
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// Classify returns the class of ip.
func Classify(ip netip.Addr) Class {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	if metadata[ip] {
		return Metadata
	}
	for _, p := range prefixes {
		if p.p.Contains(ip) {
			return p.class
		}
	}
	return Public
}

// Policy says which non-public classes a connection may reach. The zero
// Policy allows public addresses only.
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1: local development against
	// MinIO or LocalStack on the same machine.
	AllowLoopback bool
	// AllowPrivate allows RFC 1918, fc00::/7 and carrier-grade NAT
	// addresses: a store inside the deployment's own network.
	AllowPrivate bool
}

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("address refused")

// RefusedError is a refused address: Address is what was checked (an IP, or
// host:port at connection time), Class why.
type RefusedError struct {
	Address string
	Class   Class
}

func (e *RefusedError) Error() string {
	why := map[Class]string{
		Loopback:    "a loopback address (allowed for local development only)",
		Private:     "a private address (allowed only where the deployment allows private endpoints)",
		Shared:      "a carrier-grade NAT address (allowed only where the deployment allows private endpoints)",
		Metadata:    "the instance metadata or credential service",
		LinkLocal:   "a link-local address",
		Unspecified: "an unspecified address",
		Multicast:   "a multicast address",
		Reserved:    "a reserved address",
	}[e.Class]
	return fmt.Sprintf("%s is %s", e.Address, why)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Allows reports whether the policy allows class c.
func (p Policy) Allows(c Class) bool {
	switch c {
	case Public:
		return true
	case Loopback:
		return p.AllowLoopback
	case Private, Shared:
		return p.AllowPrivate
	}
	return false
}

// Check returns nil when ip may be connected to, else a *RefusedError.
func (p Policy) Check(ip netip.Addr) error {
	if c := Classify(ip); !p.Allows(c) {
		return &RefusedError{Address: ip.String(), Class: c}
	}
	return nil
}

// Control is a net.Dialer Control function: it runs after the name is
// resolved and before each connect, with address the IP and port about to
// be dialled, and refuses the connection when the policy does not allow the
// IP. An address it cannot parse is refused.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s address %q is not an IP and port", ErrRefused, network, address)
	}
	if c := Classify(ap.Addr()); !p.Allows(c) {
		return &RefusedError{Address: address, Class: c}
	}
	return nil
}
