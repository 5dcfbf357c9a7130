package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// TestExpectedBucketOwner: every call an export and its delivery manifest
// make sends the bucket's expected owner, derived once
// (destination.Owner): for daybook's own role, the deployment's account.
func TestExpectedBucketOwner(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 3)...)
	var mu sync.Mutex
	owners := map[string]int{}
	e.faults.Set(func(c buckettest.Call) error {
		mu.Lock()
		owners[aws.ToString(c.Owner)]++
		mu.Unlock()
		return nil
	}, nil)
	e.export("events", testDay)
	e.committed("events", testDay)
	if len(owners) != 1 || owners[buckettest.Owner] == 0 {
		t.Fatalf("ExpectedBucketOwner sent: %v, want %s on every call", owners, buckettest.Owner)
	}
}

// TestUnknownBucketOwner: an account whose bucket owner cannot be
// determined (daybook's own role, no expected_bucket_owner, and the
// deployment's account id unknown) fails its partition as
// destination_misconfigured without a call to its bucket; the message is
// done (redelivering it would not help), and the ledger says why.
func TestUnknownBucketOwner(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.exp.DeploymentAccountID = ""
	e.insert("events", genRows("events", testDay, 3)...)
	c := e.claim("events", testDay, "")
	if err := e.process(jobBody(t, c)); err != nil {
		t.Fatalf("Process = %v; the failure is recorded, the message done", err)
	}
	r := e.row("events", testDay)
	if manifest.CauseOf(r.LastError) != manifest.CodeDestinationMisconfigured ||
		!strings.Contains(r.LastError, "destination.expected_bucket_owner is empty") || !strings.Contains(r.LastError, "DEPLOYMENT_ACCOUNT_ID") {
		t.Errorf("ledger error %q", r.LastError)
	}
	for _, op := range []buckettest.Op{buckettest.OpPut, buckettest.OpGet, buckettest.OpDelete, buckettest.OpList, buckettest.OpCreate} {
		if n := e.faults.Count(op); n != 0 {
			t.Errorf("%d %s calls to a bucket whose owner is unknown", n, op)
		}
	}
	if b := e.get(layout.DeliveryManifestKey(e.prefix, testDay)); b != nil {
		t.Errorf("a delivery manifest was written: %s", b)
	}
}
