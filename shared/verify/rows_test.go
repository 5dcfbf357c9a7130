package verify

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func TestCountRows(t *testing.T) {
	type row struct{ A int64 }
	var pq bytes.Buffer
	if err := parquet.Write(&pq, []row{{1}, {2}, {3}, {4}}); err != nil {
		t.Fatal(err)
	}
	var nd bytes.Buffer
	zw := gzip.NewWriter(&nd)
	zw.Write([]byte("{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}\n"))
	zw.Close()

	tests := []struct {
		name    string
		key     string
		data    []byte
		want    int64
		wantErr string
	}{
		{"parquet", "p/dt=2026-03-09/part-00000.parquet", pq.Bytes(), 4, ""},
		{"ndjson", "p/dt=2026-03-09/part-00000.ndjson.gz", nd.Bytes(), 3, ""}, // blank lines are not rows
		{"parquet key, other bytes", "p/dt=2026-03-09/part-00000.parquet", nd.Bytes(), 0, "parquet"},
		{"ndjson key, other bytes", "p/dt=2026-03-09/part-00000.ndjson.gz", pq.Bytes(), 0, "gzip"},
		{"unknown extension", "p/dt=2026-03-09/part-00000.csv", pq.Bytes(), 0, `unknown data file type "p/dt=2026-03-09/part-00000.csv"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CountRows(tt.key, tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CountRows = %d, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CountRows = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
