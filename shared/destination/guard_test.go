package destination

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// fakeStore is an S3 stand-in on 127.0.0.1 that counts requests; a GET is
// redirected (307) to redirect when set.
type fakeStore struct {
	*httptest.Server
	requests atomic.Int32
	redirect string
}

func newFakeStore(t *testing.T) *fakeStore {
	f := &fakeStore{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.Method == http.MethodGet && f.redirect != "" {
			http.Redirect(w, r, f.redirect, http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeStore) port() string { return f.URL[strings.LastIndexByte(f.URL, ':')+1:] }

// clients returns Clients with the policy and a tripwire on both paths a
// connection can take: after the guard (should it allow a non-loopback
// address) and on the base HTTP client (should a client be built without
// the guard). The tripwire refuses before connect(2) and fails the test, so
// no test packet leaves this machine.
func clients(t *testing.T, p netguard.Policy) *Clients {
	tripwire := func(network, address string) error {
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("a connection to %s %s got past the guard", network, address)
			return errors.New("tripwire")
		}
		return nil
	}
	base := awshttp.NewBuildableClient().WithDialerOptions(func(d *net.Dialer) {
		d.Control = func(network, address string, _ syscall.RawConn) error { return tripwire(network, address) }
	})
	return &Clients{
		Base: aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
			RetryMaxAttempts: 1, HTTPClient: base},
		Endpoints:  p,
		afterGuard: tripwire,
	}
}

func put(ctx context.Context, c *s3.Client) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("daybook/acct_x/k"), Body: bytes.NewReader([]byte("x"))})
	return err
}

func TestCustomEndpointGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := newFakeStore(t)

	t.Run("loopback refused unless allowed, by name", func(t *testing.T) {
		before := store.requests.Load()
		c := clients(t, netguard.Policy{}).Client("acct_x", account.Destination{Bucket: "b", Endpoint: "http://localhost:" + store.port()})
		err := put(ctx, c)
		if !errors.Is(err, netguard.ErrRefused) || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("PutObject = %v, want a refused loopback address", err)
		}
		if n := store.requests.Load() - before; n != 0 {
			t.Errorf("the store saw %d requests", n)
		}
	})

	t.Run("loopback allowed for local development", func(t *testing.T) {
		before := store.requests.Load()
		c := clients(t, netguard.Policy{AllowLoopback: true}).Client("acct_x", account.Destination{Bucket: "b", Endpoint: "http://localhost:" + store.port()})
		if err := put(ctx, c); err != nil {
			t.Fatal(err)
		}
		if n := store.requests.Load() - before; n != 1 {
			t.Errorf("the store saw %d requests, want 1", n)
		}
	})

	// Literal non-loopback endpoints are refused before any connection,
	// whatever else the policy allows (the tripwire keeps the test local).
	for _, tc := range []struct {
		endpoint string
		policy   netguard.Policy
		class    string
	}{
		{"https://169.254.169.254", netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "instance metadata"},
		{"http://169.254.169.254:80", netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "instance metadata"},
		{"https://[fd00:ec2::254]", netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "instance metadata"},
		{"https://169.254.7.7:9000", netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "link-local"},
		{"https://10.0.0.1:9000", netguard.Policy{AllowLoopback: true}, "private address"},
		{"https://100.64.0.1", netguard.Policy{AllowLoopback: true}, "carrier-grade NAT"},
		{"https://0.0.0.0:" + store.port(), netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "unspecified"},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			before := store.requests.Load()
			c := clients(t, tc.policy).Client("acct_x", account.Destination{Bucket: "b", Endpoint: tc.endpoint})
			err := put(ctx, c)
			if !errors.Is(err, netguard.ErrRefused) || !strings.Contains(err.Error(), tc.class) {
				t.Fatalf("PutObject = %v, want a refused %s", err, tc.class)
			}
			if n := store.requests.Load() - before; n != 0 {
				t.Errorf("the store saw %d requests", n)
			}
		})
	}

	t.Run("a redirect to the metadata service dials through the guard", func(t *testing.T) {
		store.redirect = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
		defer func() { store.redirect = "" }()
		c := clients(t, netguard.Policy{AllowLoopback: true}).Client("acct_x", account.Destination{Bucket: "b", Endpoint: "http://127.0.0.1:" + store.port()})
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("daybook/acct_x/_SUCCESS")})
		if !errors.Is(err, netguard.ErrRefused) || !strings.Contains(err.Error(), "169.254.169.254:80 is the instance metadata") {
			t.Fatalf("GetObject = %v, want the redirect refused", err)
		}
	})

}

func TestOwner(t *testing.T) {
	cases := []struct {
		d       account.Destination
		want    *string
		wantErr bool
	}{
		{account.Destination{Bucket: "b"}, aws.String("111122223333"), false},
		{account.Destination{Bucket: "b", RoleARN: "arn:aws:iam::123456789012:role/daybook-export-x", ExternalID: "ext-1"}, aws.String("123456789012"), false},
		{account.Destination{Bucket: "b", ExpectedBucketOwner: "444455556666"}, aws.String("444455556666"), false},
		{account.Destination{Bucket: "b", Endpoint: "https://minio.example.com"}, nil, false},
	}
	for _, c := range cases {
		got, err := Owner(c.d, "111122223333")
		if aws.ToString(got) != aws.ToString(c.want) || (got == nil) != (c.want == nil) || (err != nil) != c.wantErr {
			t.Errorf("Owner(%+v) = %v, %v; want %v", c.d, aws.ToString(got), err, aws.ToString(c.want))
		}
	}
	if got, err := Owner(account.Destination{Bucket: "b"}, ""); got != nil || !errors.Is(err, account.ErrNoBucketOwner) {
		t.Errorf("Owner without a deployment account = %v, %v; want ErrNoBucketOwner", got, err)
	}
}
