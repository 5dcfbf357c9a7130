package destination

import (
	"github.com/aws/aws-sdk-go-v2/service/glue"

	"github.com/daybook-dev/daybook/shared/account"
)

// Glue returns a Glue client acting in the destination's account and
// region with the credentials of its S3 client: the same assumed role and
// external id, and the same cached credentials. Glue is AWS's alone: a
// destination's custom S3 endpoint does not apply (the account rules refuse
// Glue registration with one).
func (f *Clients) Glue(accountID string, d account.Destination) *glue.Client {
	creds := f.Client(accountID, d).Options().Credentials
	cfg := f.Base.Copy()
	if d.Region != "" {
		cfg.Region = d.Region
	}
	cfg.Credentials = creds
	return glue.NewFromConfig(cfg)
}
