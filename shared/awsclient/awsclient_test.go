package awsclient

import "testing"

func TestLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		endpoint, host, port string
		ok                   bool
	}{
		{"http://127.0.0.1:5000", "127.0.0.1", "5000", true},
		{"http://localhost:4566", "localhost", "4566", true},
		{"http://[::1]:9000", "::1", "9000", true},
		{"https://127.0.0.2", "127.0.0.2", "443", true},
		{"http://localhost", "localhost", "80", true},
		{"https://s3.example.com", "", "", false},
		{"http://10.0.0.5:9000", "", "", false},
		{"http://localhost.example.com:80", "", "", false},
		{"127.0.0.1:5000", "", "", false}, // not a URL with a host
		{"", "", "", false},
	} {
		host, port, ok := Loopback(tc.endpoint)
		if host != tc.host || port != tc.port || ok != tc.ok {
			t.Errorf("Loopback(%q) = %q, %q, %v; want %q, %q, %v", tc.endpoint, host, port, ok, tc.host, tc.port, tc.ok)
		}
		env := map[string]string{"AWS_ENDPOINT_URL": tc.endpoint}
		if got := Local(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); got != tc.ok {
			t.Errorf("Local with AWS_ENDPOINT_URL=%q = %v, want %v", tc.endpoint, got, tc.ok)
		}
	}
}
