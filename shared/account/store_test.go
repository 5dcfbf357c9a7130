package account

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestStoreIsCanonical: spellings of one store are one store; different
// stores stay different. On the old code (endpoint strings compared after
// lowercasing) the loopback, AWS-host and leading-zero rows were different
// stores.
func TestStoreIsCanonical(t *testing.T) {
	t.Parallel()
	same := [][]Destination{
		{{}, {Region: "eu-west-1"}, {Region: "us-east-1"}, {Endpoint: "https://s3.amazonaws.com"},
			{Endpoint: "https://s3.eu-west-1.amazonaws.com"}, {Endpoint: "https://S3.EU-WEST-1.AMAZONAWS.COM."},
			{Endpoint: "https://s3-eu-west-1.amazonaws.com:443"}, {Endpoint: "https://s3.dualstack.us-east-2.amazonaws.com"}},
		{{Region: "cn-north-1"}, {Endpoint: "https://s3.cn-north-1.amazonaws.com.cn"}},
		{{Endpoint: "http://127.0.0.1:9000"}, {Endpoint: "http://localhost:9000"}, {Endpoint: "http://[::1]:9000"},
			{Endpoint: "http://127.0.0.2:9000"}, {Endpoint: "http://LOCALHOST.:9000/"}, {Endpoint: "https://localhost:09000"},
			{Endpoint: "http://[::ffff:127.0.0.1]:9000"}, {Endpoint: "http://0.0.0.0:9000"}, {Endpoint: "http://minio.localhost:9000"}},
		{{Endpoint: "https://minio.example.com"}, {Endpoint: "https://MinIO.Example.com.:443"}, {Endpoint: "https://minio.example.com:443/"}},
		{{Endpoint: "http://minio.example.com"}, {Endpoint: "http://minio.example.com:80"}},
		{{Endpoint: "https://10.0.0.5:9000"}, {Endpoint: "https://[::ffff:10.0.0.5]:9000"}},
	}
	seen := map[string]int{}
	for group, ds := range same {
		want := ds[0].Store()
		for _, d := range ds {
			if got := d.Store(); got != want {
				t.Errorf("group %d: %+v is store %q, want %q (as %+v)", group, d, got, want, ds[0])
			}
		}
		if g, ok := seen[want]; ok {
			t.Errorf("groups %d and %d are both store %q", g, group, want)
		}
		seen[want] = group
	}
	// Different ports and different hosts are different stores.
	for _, pair := range [][2]string{
		{"http://localhost:9000", "http://localhost:9001"},
		{"https://minio.example.com", "https://minio.example.com:8443"},
		{"https://a.example.com", "https://b.example.com"},
		{"http://localhost:443", "http://localhost"},
	} {
		if a, b := (Destination{Endpoint: pair[0]}).Store(), (Destination{Endpoint: pair[1]}).Store(); a == b {
			t.Errorf("%s and %s are both store %q", pair[0], pair[1], a)
		}
	}
}

// TestRolePathTricksAreRefused: a role ARN whose path has an empty, `.` or
// `..` segment, or an encoded character, is refused naming the field and
// value (on the old code every row but the encoded ones was accepted, and
// IAM's wildcard daybook-export-* matched them).
func TestRolePathTricksAreRefused(t *testing.T) {
	t.Parallel()
	const acct = "arn:aws:iam::123456789012:role/"
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"daybook-export-acme", true},
		{"daybook-export-acme/team-a", true},
		{"daybook-export-x/../admin", false},
		{"daybook-export-x/./admin", false},
		{"daybook-export-x//admin", false},
		{"/daybook-export-x", false},
		{"daybook-export-x/", false},
		{"daybook-export-x/..", false},
		{"daybook-export-x/%2e%2e/admin", false},
		{"daybook-export-x%2F..%2Fadmin", false},
		{"daybook-export-x\\..\\admin", false},
		{"daybook-export-...", true}, // an odd name, no traversal
	} {
		a := valid()
		a.Destination.RoleARN, a.Destination.ExternalID = acct+tc.path, "ext-1"
		err := a.Validate(datasettest.Example(t), Rules{RolePattern: "arn:aws:iam::*:role/daybook-export-*"})
		var hit bool
		for _, fe := range Fields(err) {
			hit = hit || fe.Field == "destination.role_arn" && fe.Value == acct+tc.path
		}
		if hit == tc.ok {
			t.Errorf("role %s: refused %v (want %v): %v", tc.path, hit, !tc.ok, err)
		}
	}
}

// TestNameIsPrintable: control and format characters and overlong names
// are refused, naming the field and the value.
func TestNameIsPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"Acme Corp", true}, {"Société Générale — 東京", true}, {"", true},
		{"evil\x1b[2J", false}, {"two\nlines", false}, {"tab\there", false}, {"rtl\u202eeman", false},
		{"zero\u200bwidth", false}, {"bad\xffutf8", false}, {strings.Repeat("n", 129), false}, {strings.Repeat("n", 128), true},
	} {
		a := valid()
		a.Name = tc.name
		var hit bool
		for _, fe := range Fields(a.ValidateShape(datasettest.Example(t))) {
			hit = hit || fe.Field == "name" && fe.Value == tc.name
		}
		if hit == tc.ok {
			t.Errorf("name %q: refused %v, want %v", tc.name, hit, !tc.ok)
		}
	}
}
