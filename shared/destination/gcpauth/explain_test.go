package gcpauth_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
)

// apiError is the error the GCS driver returns when Cloud Storage answers
// a write with status and body (a JSON API error payload): the driver's
// own request through a server that answers so.
func apiError(status int, body string) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	c, err := gcs.NewClient(context.Background(), gcs.Config{Endpoint: gcs.EndpointAt(srv.URL)})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	return gcs.New(c, "acme-exports", gcs.Options{}).Put(context.Background(), "k", []byte("x"), "text/plain")
}

// TestExplainStorageErrors: each Cloud Storage error payload (as the JSON
// API documents and returns them) is said in words naming the permission
// and the command that grants it.
func TestExplainStorageErrors(t *testing.T) {
	target := gcpauth.Target{Bucket: "acme-exports", Access: federated}
	cases := []struct {
		name   string
		err    error
		want   []string
		absent bool
	}{
		{"create denied", apiError(403, `{"error": {"code": 403, "message": "daybook-writer@acme-data.iam.gserviceaccount.com does not have storage.objects.create access to the Google Cloud Storage object. Permission 'storage.objects.create' denied on resource (or it may not exist).", "errors": [{"message": "daybook-writer@acme-data.iam.gserviceaccount.com does not have storage.objects.create access to the Google Cloud Storage object. Permission 'storage.objects.create' denied on resource (or it may not exist).", "domain": "global", "reason": "forbidden"}]}}`),
			[]string{"the service account " + sa + " lacks storage.objects.create on bucket acme-exports", "gcloud storage buckets add-iam-policy-binding gs://acme-exports --member=serviceAccount:" + sa + " --role=roles/storage.objectUser"}, false},
		{"delete denied", apiError(403, `{"error": {"code": 403, "message": "x does not have storage.objects.delete access to the Google Cloud Storage object. Permission 'storage.objects.delete' denied on resource (or it may not exist).", "errors": [{"domain": "global", "reason": "forbidden"}]}}`),
			[]string{"lacks storage.objects.delete", "roles/storage.objectUser"}, false},
		{"forbidden without a permission", apiError(403, `{"error": {"errors": [{"domain": "global", "reason": "forbidden", "message": "Forbidden"}], "code": 403, "message": "Forbidden"}}`),
			[]string{"may not do this on bucket acme-exports", "roles/storage.objectUser"}, false},
		{"retention policy", apiError(403, `{"error": {"code": 403, "message": "Object 'x' is subject to bucket's retention policy or object retention and cannot be deleted or overwritten until 2027-01-01T00:00:00Z", "errors": [{"domain": "global", "reason": "retentionPolicyNotMet"}]}}`),
			[]string{"retention policy"}, false},
		{"no such bucket", apiError(404, `{"error": {"code": 404, "message": "The specified bucket does not exist.", "errors": [{"domain": "global", "reason": "notFound", "message": "The specified bucket does not exist."}]}}`),
			[]string{"bucket acme-exports does not exist"}, false},
		{"create-if-absent on an existing object", apiError(412, `{"error": {"code": 412, "message": "At least one of the pre-conditions you specified did not hold.", "errors": [{"domain": "global", "reason": "conditionNotMet", "locationType": "header", "location": "If-Match"}]}}`),
			[]string{"exists already"}, false},
		{"something else", io.ErrUnexpectedEOF, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := gcpauth.Explain(c.err, target)
			if c.absent != (got == "") {
				t.Fatalf("Explain = %q", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}
