package verify_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/verify"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(motoserver.RunTests(m, &srv)) }

func gz(lines ...string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	for _, l := range lines {
		w.Write([]byte(l + "\n"))
	}
	w.Close()
	return b.Bytes()
}

func TestPartition(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := awsclient.NewS3(cfg)
	put := func(bucket, key string, body []byte) {
		t.Helper()
		if _, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// commit writes a well-formed partition and returns its prefix.
	commit := func(t *testing.T, bucket string) string {
		if _, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
			t.Fatal(err)
		}
		pp := "p/v1/events/dt=2026-11-20/"
		data := gz(`{"a":1}`, `{"a":2}`, `{"a":3}`)
		sum := sha256.Sum256(data)
		m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Day: "2026-11-20", Generation: 2,
			Files: []manifest.File{{Key: pp + "part-00000.ndjson.gz", Rows: 3, Bytes: int64(len(data)), CRC32C: verify.CRC32C(data), SHA256: hex.EncodeToString(sum[:])}}}
		m.Sum()
		mb, _ := m.Encode()
		put(bucket, pp+"part-00000.ndjson.gz", data)
		put(bucket, pp+"_manifest.json", mb)
		put(bucket, pp+"_SUCCESS", manifest.NewSuccess(2, "run", pp+"_manifest.json", mb, time.Unix(0, 0)).Encode())
		return pp
	}
	tests := []struct {
		name   string
		tamper func(bucket, pp string)
		want   string // "" = OK
	}{
		{"intact", func(string, string) {}, ""},
		{"orphan part", func(b, pp string) { put(b, pp+"part-00001.ndjson.gz", gz(`{"a":9}`)) }, "orphan"},
		{"replaced bytes", func(b, pp string) { put(b, pp+"part-00000.ndjson.gz", gz(`{"a":1}`, `{"a":2}`, `{"a":4}`)) }, "CRC32C"},
		{"fewer rows, other size", func(b, pp string) { put(b, pp+"part-00000.ndjson.gz", gz(`{"a":1}`)) }, "bytes stored"},
		{"manifest edited after commit", func(b, pp string) {
			out, _ := api.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String(pp + "_manifest.json")})
			var buf bytes.Buffer
			buf.ReadFrom(out.Body)
			put(b, pp+"_manifest.json", bytes.Replace(buf.Bytes(), []byte(`"run_id": ""`), []byte(`"run_id": "x"`), 1))
		}, "SHA-256"},
		{"missing part", func(b, pp string) {
			api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String(pp + "part-00000.ndjson.gz")})
		}, "missing"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bucket := "verify-" + strings.ReplaceAll(strings.ToLower(tt.name), " ", "-") + "-" + string(rune('a'+i))
			bucket = strings.ReplaceAll(bucket, ",", "")
			pp := commit(t, bucket)
			tt.tamper(bucket, pp)
			r, err := verify.Partition(ctx, api, verify.Bucket{Name: bucket}, pp, verify.CountRows)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Committed {
				t.Fatal("not committed")
			}
			got := strings.Join(r.Problems, "; ")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Fatalf("problems %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("no _SUCCESS is not committed", func(t *testing.T) {
		bucket := "verify-uncommitted"
		pp := commit(t, bucket)
		api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String(pp + "_SUCCESS")})
		r, err := verify.Partition(ctx, api, verify.Bucket{Name: bucket}, pp, nil)
		if err != nil || r.Committed || !r.OK() {
			t.Fatalf("report %+v, err %v", r, err)
		}
	})
}
