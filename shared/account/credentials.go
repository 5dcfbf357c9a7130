package account

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// How daybook reaches a bucket in Google Cloud Storage or a container in
// Azure Blob Storage without a long-lived secret (C1): by federation, from
// its own AWS identity, which the customer trusts in their cloud.
//
//   - GCS: Workload Identity Federation. The customer's workload identity
//     pool has an AWS provider trusting the deployment's AWS account;
//     daybook exchanges a signed GetCallerIdentity request for a Google
//     token and impersonates the customer's service account, which the
//     customer binds roles/iam.workloadIdentityUser for the exporter's role
//     (shared/destination/gcpauth).
//   - Azure: a federated identity credential on the customer's Entra ID
//     application, trusting the token AWS STS issues the exporter's role
//     (outbound identity federation, sts:GetWebIdentityToken), passed as a
//     client assertion (shared/destination/azureauth).
//
// A customer who will not federate can give a key instead, explicitly
// (credential_mode secret): a GCS service account key, or an Azure SAS,
// kept in AWS Secrets Manager and named by its ARN. The record
// itself never holds a secret: Validate refuses any field that looks like
// one (secretShape).

// Credential modes of GCSAccess and AzureAccess.
const (
	// CredentialFederated (the default) exchanges daybook's AWS identity
	// for a short-lived token of the customer's cloud.
	CredentialFederated = "federated"
	// CredentialSecret reads a key from AWS Secrets Manager (SecretARN).
	CredentialSecret = "secret"
)

// GCSAccess is how daybook gets a token for a Google Cloud Storage bucket:
// destination.gcs in the account file.
type GCSAccess struct {
	// CredentialMode is CredentialFederated (empty) or CredentialSecret.
	CredentialMode string `json:"credential_mode,omitempty"`
	// WorkloadIdentityProvider is the customer's AWS provider, as
	// projects/<project number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>
	// (federated).
	WorkloadIdentityProvider string `json:"workload_identity_provider,omitempty"`
	// ServiceAccount is the email of the customer's service account daybook
	// impersonates (federated), which holds the bucket's role.
	ServiceAccount string `json:"service_account,omitempty"`
	// SecretARN names the AWS Secrets Manager secret holding a service
	// account key (JSON; an HMAC key is refused: it signs the XML API only).
	SecretARN string `json:"secret_arn,omitempty"`
}

// AzureAccess is how daybook gets a token for an Azure Blob Storage
// container: destination.azure in the account file.
type AzureAccess struct {
	// CredentialMode is CredentialFederated (empty) or CredentialSecret.
	CredentialMode string `json:"credential_mode,omitempty"`
	// TenantID is the customer's Entra ID tenant (directory) id, a GUID
	// (federated).
	TenantID string `json:"tenant_id,omitempty"`
	// ClientID is the application (client) id of the customer's Entra ID
	// application holding the federated credential, a GUID (federated).
	ClientID string `json:"client_id,omitempty"`
	// SecretARN names the AWS Secrets Manager secret holding a SAS token
	// for the container (secret).
	SecretARN string `json:"secret_arn,omitempty"`
}

// Mode is the access's credential mode, CredentialFederated when unset.
func (g GCSAccess) Mode() string { return modeOr(g.CredentialMode) }

// Mode is the access's credential mode, CredentialFederated when unset.
func (a AzureAccess) Mode() string { return modeOr(a.CredentialMode) }

func modeOr(m string) string {
	if m == "" {
		return CredentialFederated
	}
	return m
}

// Audience is the provider's full resource name, the audience of the
// token exchange: //iam.googleapis.com/ + WorkloadIdentityProvider.
func (g GCSAccess) Audience() string { return "//iam.googleapis.com/" + g.WorkloadIdentityProvider }

var (
	// wifProviderRE: pool and provider ids are 4 to 32 characters of
	// lowercase letters, digits and hyphens
	// (https://cloud.google.com/iam/docs/reference/rest/v1/projects.locations.workloadIdentityPools/create).
	wifProviderRE = regexp.MustCompile(`^projects/[0-9]{1,20}/locations/global/workloadIdentityPools/[a-z0-9-]{4,32}/providers/[a-z0-9-]{4,32}$`)
	// serviceAccountRE is a service account's email: user-managed ones end
	// in .iam.gserviceaccount.com, Google-managed defaults in other
	// gserviceaccount.com domains.
	serviceAccountRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,99}@[a-z0-9][a-z0-9.-]{0,99}\.gserviceaccount\.com$`)
	guidRE           = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// secretARNRE is a Secrets Manager secret ARN (the name, then AWS's
	// random suffix).
	secretARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$`)
)

// checkAccess checks destination.gcs and destination.azure: each only
// with its store (destination.store), required there but at a custom
// endpoint that is not the cloud's own (an emulator, reached without
// credentials); a known mode, the
// fields that mode needs and no field of the other mode, each of its own
// form.
func (d Destination) checkAccess(p *problems) {
	kind := d.Kind()
	for _, b := range []struct {
		field string
		set   bool
		store StoreKind
	}{{"destination.gcs", d.GCS != nil, StoreGCS}, {"destination.azure", d.Azure != nil, StoreAzure}} {
		switch {
		case b.set && kind != b.store:
			p.add(b.field, "", "applies to store %s, and the store is %s (set destination.store: %s)", b.store, kind, b.store)
		case !b.set && kind == b.store && (d.Endpoint == "" || isGoogleHost(d.Endpoint) || isAzureHost(d.Endpoint)):
			p.add(b.field, "", "required with store %s: how daybook gets a token (credential_mode federated, the default, or secret; docs/stores.md)", b.store)
		}
	}
	if g := d.GCS; g != nil {
		const f = "destination.gcs."
		checkMode(p, f, g.CredentialMode, g.SecretARN)
		switch g.Mode() {
		case CredentialFederated:
			switch {
			case g.WorkloadIdentityProvider == "":
				p.add(f+"workload_identity_provider", "", "required (projects/<project number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>), or credential_mode secret")
			case !wifProviderRE.MatchString(g.WorkloadIdentityProvider):
				p.add(f+"workload_identity_provider", g.WorkloadIdentityProvider, "want projects/<project number>/locations/global/workloadIdentityPools/<pool>/providers/<provider> (the pool and provider ids: 4 to 32 of a-z, 0-9 and -)")
			}
			switch {
			case g.ServiceAccount == "":
				p.add(f+"service_account", "", "required: the email of the service account daybook impersonates")
			case !serviceAccountRE.MatchString(g.ServiceAccount):
				p.add(f+"service_account", g.ServiceAccount, "want a service account email, e.g. daybook-writer@my-project.iam.gserviceaccount.com")
			}
		case CredentialSecret:
			onlyFederated(p, f+"workload_identity_provider", g.WorkloadIdentityProvider)
			onlyFederated(p, f+"service_account", g.ServiceAccount)
		}
	}
	if a := d.Azure; a != nil {
		const f = "destination.azure."
		checkMode(p, f, a.CredentialMode, a.SecretARN)
		switch a.Mode() {
		case CredentialFederated:
			for _, fv := range [][2]string{{"tenant_id", a.TenantID}, {"client_id", a.ClientID}} {
				switch {
				case fv[1] == "":
					p.add(f+fv[0], "", "required (a GUID), or credential_mode secret")
				case !guidRE.MatchString(fv[1]):
					p.add(f+fv[0], fv[1], "want a GUID such as 00000000-0000-0000-0000-000000000000")
				}
			}
		case CredentialSecret:
			onlyFederated(p, f+"tenant_id", a.TenantID)
			onlyFederated(p, f+"client_id", a.ClientID)
		}
	}
}

// checkMode: the mode is known, and a secret ARN goes with the secret mode
// only, which needs one.
func checkMode(p *problems, f, mode, secretARN string) {
	switch mode {
	case "", CredentialFederated:
		if secretARN != "" {
			p.add(f+"secret_arn", secretARN, "is read only with credential_mode secret, which must be set explicitly: without it daybook federates and holds no key")
		}
	case CredentialSecret:
		switch {
		case secretARN == "":
			p.add(f+"secret_arn", "", "required with credential_mode secret: the ARN of the AWS Secrets Manager secret holding the key")
		case !secretARNRE.MatchString(secretARN):
			p.add(f+"secret_arn", secretARN, "want an AWS Secrets Manager secret ARN, arn:aws:secretsmanager:<region>:<account>:secret:<name>")
		}
	default:
		p.add(f+"credential_mode", mode, "want federated (the default) or secret")
	}
}

func onlyFederated(p *problems, field, v string) {
	if v != "" {
		p.add(field, v, "is for credential_mode federated, and the mode is secret")
	}
}

// secretARNs returns the secret ARNs the destination names, with their
// fields.
func (d Destination) secretARNs() [][2]string {
	var out [][2]string
	if d.GCS != nil && d.GCS.SecretARN != "" {
		out = append(out, [2]string{"destination.gcs.secret_arn", d.GCS.SecretARN})
	}
	if d.Azure != nil && d.Azure.SecretARN != "" {
		out = append(out, [2]string{"destination.azure.secret_arn", d.Azure.SecretARN})
	}
	return out
}

// checkSecretRule refuses a secret ARN outside the secrets the deployment
// may read (Rules.SecretPattern, the exporter's IAM resource pattern).
func (d Destination) checkSecretRule(p *problems, pattern string) {
	for _, fv := range d.secretARNs() {
		switch {
		case !secretARNRE.MatchString(fv[1]):
			// named by checkMode
		case pattern == "":
			p.add(fv[0], fv[1], "this deployment reads no destination secrets (DESTINATION_SECRET_PATTERN is unset; the stack parameter DestinationSecretPrefix sets it)")
		case !MatchWildcard(pattern, fv[1]):
			p.add(fv[0], fv[1], "outside the secrets this deployment may read (%s): name the secret under the deployment's prefix", pattern)
		}
	}
}

// Secret shapes: what a key, a SAS or a private key looks like when pasted
// into a field of the account record by mistake. Values in the record are
// printed, logged and stored in the ledger, so such a value is refused (and
// never echoed whole).
var secretShapes = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY`), "a PEM private key"},
	{regexp.MustCompile(`"private_key(_id)?"\s*:`), "a Google service account key (JSON)"},
	{regexp.MustCompile(`(?i)(^|[?&;])sig=[^&]+`), "a shared access signature (sig=)"},
	{regexp.MustCompile(`(?i)(AccountKey|SharedAccessSignature|SharedAccessKey)=`), "an Azure storage connection string"},
	{regexp.MustCompile(`(^|[^A-Za-z0-9+/])[A-Za-z0-9+/]{86}==($|[^A-Za-z0-9+/=])`), "an Azure storage account key"},
	{regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`), "an AWS access key id"},
	{regexp.MustCompile(`\bGOOG[0-9A-Z]{20,}\b`), "a Cloud Storage HMAC access id"},
	{regexp.MustCompile(`(?i)\bclient_secret\b|\bya29\.[A-Za-z0-9_-]{20,}`), "an OAuth client secret or access token"},
}

// keyLikeRE is a bare 40-character base64 string: an HMAC or AWS secret
// key. Only the credential fields are held to it; a prefix segment of that
// shape is a customer's own naming.
var keyLikeRE = regexp.MustCompile(`^[A-Za-z0-9+/]{40}$`)

// secretShape says what secret v looks like, or "".
func secretShape(v string) string {
	for _, s := range secretShapes {
		if s.re.MatchString(v) {
			return s.what
		}
	}
	return ""
}

// redact is what an error shows of a value that looks like a secret.
func redact(v string) string {
	if len(v) <= 8 {
		return "(redacted)"
	}
	return v[:4] + "…(redacted, " + fmt.Sprint(len(v)) + " characters)"
}

// secretFields returns the fields of the record that look like a secret,
// with their values and what each looks like.
func (a Account) secretFields() map[string][2]string {
	out := map[string][2]string{}
	for field, v := range flattenStrings(a) {
		what := secretShape(v)
		if what == "" && isCredentialField(field) && keyLikeRE.MatchString(v) {
			what = "a secret key (40 base64 characters)"
		}
		if what != "" {
			out[field] = [2]string{v, what}
		}
	}
	return out
}

// checkNoSecrets refuses every field of the record that looks like a
// secret, naming the field and a redacted value.
func (a Account) checkNoSecrets(p *problems) {
	for field, vw := range a.secretFields() {
		p.add(field, redact(vw[0]), "looks like %s: the account record never holds a secret. Keep it in AWS Secrets Manager and name it with secret_arn and credential_mode secret", vw[1])
	}
}

// redactSecrets replaces, in every problem, each value of the record that
// looks like a secret by its redacted form: the other checks of a field
// name the value they refuse, and an error is printed and logged.
func (a Account) redactSecrets(p problems) problems {
	secrets := a.secretFields()
	if len(secrets) == 0 {
		return p
	}
	var pairs []string
	for _, vw := range secrets {
		pairs = append(pairs, vw[0], redact(vw[0]))
	}
	r := strings.NewReplacer(pairs...)
	for _, err := range p {
		if fe, ok := err.(*FieldError); ok {
			fe.Value, fe.Reason = r.Replace(fe.Value), r.Replace(fe.Reason)
		}
	}
	return p
}

func isCredentialField(field string) bool {
	return strings.HasPrefix(field, "destination.gcs.") || strings.HasPrefix(field, "destination.azure.") ||
		field == "destination.role_arn" || field == "destination.endpoint"
}

// flattenStrings maps each string leaf of the account's JSON document to its
// value (flatten's paths, the values unquoted).
func flattenStrings(a Account) map[string]string {
	out := map[string]string{}
	for k, v := range flatten(a) {
		if len(v) >= 2 && v[0] == '"' {
			var s string
			if err := json.Unmarshal([]byte(v), &s); err == nil {
				out[k] = s
			}
		}
	}
	return out
}
