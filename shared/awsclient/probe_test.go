package awsclient

import (
	"context"
	"errors"
	"net"
	"testing"
)

// TestProbe: a loopback endpoint that answers passes, one that does not is
// ErrLocalDown naming it, and a remote or empty endpoint is never dialed.
func TestProbe(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	var d net.Dialer
	noDial := func(context.Context, string, string) (net.Conn, error) {
		t.Error("dialed an endpoint that is not on this machine")
		return nil, errors.New("no")
	}
	for _, tt := range []struct {
		endpoint string
		dial     func(context.Context, string, string) (net.Conn, error)
		down     bool
	}{
		{"http://" + ln.Addr().String(), d.DialContext, false},
		{"http://" + deadAddr, d.DialContext, true},
		{"https://s3.us-east-1.amazonaws.com", noDial, false},
		{"", noDial, false},
	} {
		err := Probe(t.Context(), tt.dial, tt.endpoint)
		if got := errors.Is(err, ErrLocalDown); got != tt.down {
			t.Errorf("Probe(%q) = %v, want down %v", tt.endpoint, err, tt.down)
		}
	}
}
