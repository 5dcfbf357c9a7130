// Package awscount is test support: it counts the AWS requests a piece of
// code makes through the SDK, by service and operation, from a middleware
// added to an aws.Config (every client built from it counts), and keeps a
// Markdown table of those counts in a document honest: a test compares its
// counts with the document's rows and fails naming the row that differs,
// or rewrites the rows when asked to.
package awscount

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts requests by "<service> <operation>", one per call (an
// SDK retry of the same call is not counted again).
type Counter struct {
	mu sync.Mutex
	n  map[string]int
}

// Config returns a copy of cfg whose clients count into c.
func (c *Counter) Config(cfg aws.Config) aws.Config {
	out := cfg.Copy()
	out.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), c.add)
	return out
}

func (c *Counter) add(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("awscount", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[awsmiddleware.GetServiceID(ctx)+" "+awsmiddleware.GetOperationName(ctx)]++
		c.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// Counts returns the requests since the last Reset, by "<service>
// <operation>".
func (c *Counter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// Reset zeroes the counts.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.n = nil
	c.mu.Unlock()
}

// Ops lists counts as "<service> <operation>: n" lines, sorted.
func Ops(counts map[string]int) []string {
	var out []string
	for k, n := range counts {
		out = append(out, k+": "+strconv.Itoa(n))
	}
	sort.Strings(out)
	return out
}

// Columns are the request kinds of the table, in order, as AWS prices
// them: DynamoDB reads and writes; S3 PUT, COPY, POST and LIST are one
// price tier, GET and HEAD another (multipart parts and their create and
// complete are PUT-class requests; DELETE and abort are free).
var Columns = []string{"DynamoDB reads", "DynamoDB writes", "S3 PUT", "S3 multipart", "S3 LIST", "S3 GET", "S3 HEAD", "S3 DELETE", "SQS", "EventBridge", "STS"}

var kinds = map[string]string{
	"DynamoDB GetItem": "DynamoDB reads", "DynamoDB Query": "DynamoDB reads", "DynamoDB BatchGetItem": "DynamoDB reads", "DynamoDB Scan": "DynamoDB reads",
	"DynamoDB PutItem": "DynamoDB writes", "DynamoDB UpdateItem": "DynamoDB writes", "DynamoDB DeleteItem": "DynamoDB writes",
	"DynamoDB TransactWriteItems": "DynamoDB writes", "DynamoDB BatchWriteItem": "DynamoDB writes",
	"S3 PutObject": "S3 PUT", "S3 CopyObject": "S3 PUT",
	"S3 CreateMultipartUpload": "S3 multipart", "S3 UploadPart": "S3 multipart", "S3 CompleteMultipartUpload": "S3 multipart",
	"S3 ListObjectsV2": "S3 LIST", "S3 ListMultipartUploads": "S3 LIST",
	"S3 GetObject": "S3 GET", "S3 HeadObject": "S3 HEAD",
	"S3 DeleteObject": "S3 DELETE", "S3 DeleteObjects": "S3 DELETE", "S3 AbortMultipartUpload": "S3 DELETE",
	"EventBridge PutEvents": "EventBridge", "STS AssumeRole": "STS",
}

// Kind is the column an operation ("<service> <operation>") counts in;
// false for one the table has no column for.
func Kind(op string) (string, bool) {
	if k, ok := kinds[op]; ok {
		return k, true
	}
	if strings.HasPrefix(op, "SQS ") {
		return "SQS", true
	}
	return "", false
}

// Row is one line of the table: a scenario, the function that ran it, and
// its requests by column.
type Row struct {
	Scenario, Function string
	Counts             map[string]int
}

// RowOf sums counts into a row; an operation with no column is an error
// naming it.
func RowOf(scenario, function string, counts map[string]int) (Row, error) {
	r := Row{Scenario: scenario, Function: function, Counts: map[string]int{}}
	for op, n := range counts {
		k, ok := Kind(op)
		if !ok {
			return r, fmt.Errorf("awscount: %s: operation %q has no column in the table", scenario, op)
		}
		r.Counts[k] += n
	}
	return r, nil
}

func (r Row) line() string {
	cells := []string{r.Scenario, r.Function}
	for _, c := range Columns {
		cells = append(cells, strconv.Itoa(r.Counts[c]))
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// Markers bound the table in the document.
const (
	Begin = "<!-- request-counts:begin -->"
	End   = "<!-- request-counts:end -->"
)

// Header is the table's header and rule lines.
func Header() string {
	h := "| Scenario | Function | " + strings.Join(Columns, " | ") + " |\n|---|---|"
	return h + strings.Repeat("---:|", len(Columns))
}

// CheckDoc compares rows with the table in the document at path, each by
// its scenario: a row missing from the document, or a count that differs,
// fails t naming the row and the column. With update it rewrites those
// rows (appending new ones) instead, leaving the others as they are.
func CheckDoc(t testing.TB, path string, rows []Row, update bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, Begin), strings.Index(doc, End)
	if i < 0 || j < i {
		t.Fatalf("%s: no %s ... %s table", path, Begin, End)
	}
	body := strings.Split(strings.Trim(doc[i+len(Begin):j], "\n"), "\n")
	var lines []string
	for _, l := range body {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| Scenario |") {
			lines = append(lines, l)
		}
	}
	find := func(scenario string) int {
		for k, l := range lines {
			if cells := split(l); len(cells) > 0 && cells[0] == scenario {
				return k
			}
		}
		return -1
	}
	for _, r := range rows {
		k := find(r.Scenario)
		if update {
			if k < 0 {
				lines = append(lines, r.line())
			} else {
				lines[k] = r.line()
			}
			continue
		}
		if k < 0 {
			t.Errorf("%s: the request-count table has no row %q; counted: %s", path, r.Scenario, r.line())
			continue
		}
		cells := split(lines[k])
		if len(cells) != 2+len(Columns) {
			t.Errorf("%s: row %q has %d cells, want %d", path, r.Scenario, len(cells), 2+len(Columns))
			continue
		}
		if cells[1] != r.Function {
			t.Errorf("%s: row %q: function %q in the doc, %q counted", path, r.Scenario, cells[1], r.Function)
		}
		for c, col := range Columns {
			if n, err := strconv.Atoi(cells[2+c]); err != nil || n != r.Counts[col] {
				t.Errorf("%s: row %q: %s is %s in the doc, %d counted (go test -run %s -update rewrites the row)", path, r.Scenario, col, cells[2+c], r.Counts[col], t.Name())
			}
		}
	}
	if !update {
		return
	}
	out := doc[:i+len(Begin)] + "\n" + Header() + "\n" + strings.Join(lines, "\n") + "\n" + doc[j:]
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

func split(line string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for k := range parts {
		parts[k] = strings.TrimSpace(parts[k])
	}
	return parts
}
