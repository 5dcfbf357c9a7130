package console

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/destination"
)

// DestinationBuckets reads accounts' buckets the way the exporter writes
// them and verify reads them: through clients (the account's role with its
// external id, or daybook's own credentials; custom endpoints behind the
// endpoint guard), sending the expected bucket owner (destination.Owner)
// on every request. An owner that cannot be determined is an error, and
// nothing is read.
func DestinationBuckets(clients *destination.Clients, deploymentAccountID string) Buckets {
	return BucketsFunc(func(acct account.Account) (ObjectReader, error) {
		owner, err := destination.Owner(acct.Destination, deploymentAccountID)
		if err != nil {
			return nil, err
		}
		return clients.Open(context.Background(), acct.ID, acct.Destination, bucket.Options{ExpectedOwner: aws.ToString(owner)})
	})
}
