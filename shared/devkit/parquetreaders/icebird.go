package parquetreaders

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"
)

// IcebirdRow is one row of an Iceberg table as icebird read it.
type IcebirdRow struct {
	ID string `json:"id"`
	// At is the timestamp column's value, in milliseconds since the epoch.
	At float64 `json:"at"`
}

// Time is At as a time.
func (r IcebirdRow) Time() time.Time { return time.UnixMilli(int64(r.At)).UTC() }

// ReadIcebird reads the current snapshot of the Iceberg table at table
// (s3://bucket/location) with icebird, an independent JavaScript Iceberg
// reader, through the S3 endpoint at endpoint (a local emulator, read
// without credentials), and returns each row's idColumn and atColumn. See
// js/icebird.mjs for the two shims it runs with.
func ReadIcebird(endpoint, table, idColumn, atColumn string) ([]IcebirdRow, error) {
	dir, err := JSDir()
	if err != nil {
		return nil, err
	}
	node, err := checkInstall(dir)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, filepath.Join(dir, "icebird.mjs"), endpoint, table, idColumn, atColumn)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("icebird %s: %w: %s", table, err, stderr.String())
	}
	var rows []IcebirdRow
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r IcebirdRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("icebird %s: %w", table, err)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}
