package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr string
		want Class
	}{
		{"8.8.8.8", Public},
		{"52.216.0.1", Public},
		{"2600:1f18::1", Public},
		{"127.0.0.1", Loopback},
		{"127.255.0.9", Loopback},
		{"::1", Loopback},
		{"::ffff:127.0.0.1", Loopback},
		{"10.0.0.1", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"172.32.0.1", Public},
		{"192.168.1.1", Private},
		{"fc00::1", Private},
		{"fd12:3456::1", Private},
		{"::ffff:10.1.2.3", Private},
		{"100.64.0.1", Shared},
		{"100.127.255.255", Shared},
		{"100.128.0.1", Public},
		{"169.254.169.254", Metadata},
		{"::ffff:169.254.169.254", Metadata},
		{"64:ff9b::a9fe:a9fe", Metadata}, // NAT64 of 169.254.169.254
		{"64:ff9b::a00:1", Private},      // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", Public},     // NAT64 of 8.8.8.8
		{"169.254.170.2", Metadata},
		{"169.254.170.23", Metadata},
		{"fd00:ec2::254", Metadata},
		{"fd00:ec2::23", Metadata},
		{"169.254.1.1", LinkLocal},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		{"0.0.0.0", Unspecified},
		{"0.1.2.3", Unspecified},
		{"::", Unspecified},
		{"224.0.0.1", Multicast},
		{"239.255.255.250", Multicast},
		{"ff02::1", Multicast},
		{"240.0.0.1", Reserved},
		{"255.255.255.255", Reserved},
	}
	for _, c := range cases {
		if got := Classify(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Classify(%s) = %s, want %s", c.addr, got, c.want)
		}
	}
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	type allowed struct{ zero, loopback, private, both bool }
	cases := []struct {
		addr string
		want allowed
	}{
		{"8.8.8.8", allowed{true, true, true, true}},
		{"127.0.0.1", allowed{false, true, false, true}},
		{"::1", allowed{false, true, false, true}},
		{"10.0.0.1", allowed{false, false, true, true}},
		{"fc00::1", allowed{false, false, true, true}},
		{"100.64.0.1", allowed{false, false, true, true}},
		// Never, whatever the policy.
		{"169.254.169.254", allowed{}},
		{"fd00:ec2::254", allowed{}},
		{"169.254.10.10", allowed{}},
		{"fe80::1", allowed{}},
		{"0.0.0.0", allowed{}},
		{"::", allowed{}},
		{"224.0.0.1", allowed{}},
		{"255.255.255.255", allowed{}},
	}
	policies := []struct {
		name string
		p    Policy
		get  func(allowed) bool
	}{
		{"zero", Policy{}, func(a allowed) bool { return a.zero }},
		{"loopback", Policy{AllowLoopback: true}, func(a allowed) bool { return a.loopback }},
		{"private", Policy{AllowPrivate: true}, func(a allowed) bool { return a.private }},
		{"both", Policy{AllowLoopback: true, AllowPrivate: true}, func(a allowed) bool { return a.both }},
	}
	for _, c := range cases {
		for _, pol := range policies {
			err := pol.p.Check(netip.MustParseAddr(c.addr))
			if want := pol.get(c.want); (err == nil) != want {
				t.Errorf("%s policy, %s: error %v, want allowed=%v", pol.name, c.addr, err, want)
			}
			var re *RefusedError
			if err != nil && (!errors.Is(err, ErrRefused) || !errors.As(err, &re) || re.Address != netip.MustParseAddr(c.addr).String()) {
				t.Errorf("%s policy, %s: error %v does not name the address", pol.name, c.addr, err)
			}
		}
	}
	if err := (Policy{}).Check(netip.MustParseAddr("169.254.169.254")); err == nil || !strings.Contains(err.Error(), "169.254.169.254 is the instance metadata") {
		t.Errorf("metadata message: %v", err)
	}
}

// listener accepts on 127.0.0.1 and records the first byte each connection
// sends, so a test can tell which dials reached it.
type listener struct {
	net.Listener
	mu    sync.Mutex
	seen  []byte
	ready chan struct{}
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{Listener: ln, ready: make(chan struct{}, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.ReadFull(c, b[:])
			c.Close()
			l.mu.Lock()
			l.seen = append(l.seen, b[0])
			l.mu.Unlock()
			l.ready <- struct{}{}
		}
	}()
	return l
}

// guarded returns a dialer with the policy's Control followed by a tripwire:
// if the guard ever let a non-loopback address through, the tripwire refuses
// it before connect(2) and the test fails, so the test itself never sends a
// packet off this machine.
func guarded(t *testing.T, p Policy) *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, Control: func(network, address string, c syscall.RawConn) error {
		if err := p.Control(network, address, c); err != nil {
			return err
		}
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the guard let %s %s through", network, address)
			return errors.New("tripwire: not a loopback address")
		}
		return nil
	}}
}

func TestControlWithARealListener(t *testing.T) {
	t.Parallel()
	l := listen(t)
	port := l.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	hostPort := func(h string) string { return net.JoinHostPort(h, strconv.Itoa(port)) }

	// Refused before any connection: loopback without AllowLoopback (by
	// name and by address), and non-loopback literals whatever the policy
	// (the tripwire keeps them on this machine if the guard were wrong).
	refused := []struct {
		p    Policy
		addr string
	}{
		{Policy{}, hostPort("localhost")},
		{Policy{}, hostPort("127.0.0.1")},
		{Policy{AllowPrivate: true}, hostPort("127.0.0.1")},
		{Policy{AllowLoopback: true}, hostPort("169.254.169.254")},
		{Policy{AllowLoopback: true, AllowPrivate: true}, hostPort("169.254.169.254")},
		{Policy{AllowLoopback: true}, hostPort("10.0.0.1")},
		{Policy{AllowLoopback: true}, hostPort("100.64.0.1")},
		{Policy{AllowLoopback: true, AllowPrivate: true}, hostPort("fd00:ec2::254")},
		{Policy{AllowLoopback: true, AllowPrivate: true}, hostPort("0.0.0.0")},
		{Policy{AllowLoopback: true, AllowPrivate: true}, hostPort("::ffff:169.254.169.254")},
	}
	for _, r := range refused {
		c, err := guarded(t, r.p).DialContext(ctx, "tcp", r.addr)
		if err == nil {
			c.Close()
			t.Errorf("%+v: dial %s succeeded", r.p, r.addr)
			continue
		}
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%+v: dial %s: %v, want ErrRefused", r.p, r.addr, err)
		}
	}

	// Allowed: a name that resolves to 127.0.0.1, with loopback allowed.
	for i, addr := range []string{hostPort("localhost"), hostPort("127.0.0.1")} {
		c, err := guarded(t, Policy{AllowLoopback: true}).DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatalf("dial %s with loopback allowed: %v", addr, err)
		}
		_, _ = c.Write([]byte{byte('A' + i)})
		c.Close()
		select {
		case <-l.ready:
		case <-time.After(5 * time.Second):
			t.Fatal("the listener saw no connection")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if string(l.seen) != "AB" {
		t.Errorf("the listener saw connections %q, want exactly the two allowed ones %q", l.seen, "AB")
	}
}

func TestControlRefusesWhatItCannotParse(t *testing.T) {
	t.Parallel()
	if err := (Policy{AllowLoopback: true, AllowPrivate: true}).Control("tcp", "localhost:80", nil); !errors.Is(err, ErrRefused) {
		t.Errorf("an unresolved name: %v", err)
	}
}
