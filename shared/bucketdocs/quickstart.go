package bucketdocs

import (
	"strings"

	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
)

// QuickStartCopyHeading introduces the Quick start's block of the same
// steps on a local copy of the bucket; a test finds that block by it and
// runs it as written.
const QuickStartCopyHeading = "**The same steps on a local copy of the bucket**"

// quickCLI is the Quick start's commands on one store: its own command-line
// tool for listing, reading and copying, and the DuckDB secret that lets
// one DuckDB process read the store's URIs. Each piped `duckdb` is a new
// process, so each gets the secret.
type quickCLI struct {
	tool       string   // "the AWS CLI"
	name       string   // the secret's: "S3"
	copyCmd    string   // the command sync runs: "aws s3 sync"
	secret     string   // the DuckDB statement
	secretText []string // the secret and what it takes, the opening paragraph's end (GCS, Azure)
	// days lists the dt= folders under dir (a key ending in /), one day
	// a line; cat prints an object, fetch writes it to a local file;
	// sync copies the objects under prefix to ./copy/<prefix>.
	days  func(dir string) string
	cat   func(key string) string
	fetch func(key, file string) string
	sync  func(prefix string) string
	// base is the bucket's root as the DuckDB script names its files: the
	// local copy's sed points it at ./copy/.
	base string
}

// quickCLIs: each store's tool and DuckDB secret.
//
// S3, the AWS CLI: aws s3 ls/cp/sync; DuckDB's s3 secret with the
// credential chain (https://duckdb.org/docs/stable/core_extensions/httpfs/s3api).
//
// GCS, the gcloud CLI (gcloud storage, which replaces gsutil:
// https://cloud.google.com/storage/docs/gsutil-transition-to-gcloud):
// `gcloud storage ls` prints each folder under a prefix as its gs:// URL
// ending in /, `cat` prints an object, `cp` copies one, and `rsync
// --recursive` copies a prefix's objects, keys as paths
// (https://cloud.google.com/sdk/gcloud/reference/storage,
// https://cloud.google.com/sdk/gcloud/reference/storage/rsync). DuckDB
// reads gs:// through httpfs with an HMAC key of a service account that
// may read the bucket: CREATE SECRET (TYPE gcs, KEY_ID ..., SECRET ...)
// (https://duckdb.org/docs/stable/guides/network_cloud_storage/gcs_import);
// the key is taken from the environment so the lines run as written.
//
// Azure, the Azure CLI with --auth-mode login (the signed-in Entra ID
// identity; https://learn.microsoft.com/azure/storage/blobs/blob-cli):
// `az storage blob list --delimiter /` lists the folders under --prefix as
// names ending in / (--num-results '*': every one, not the first 5,000),
// `download --file` writes one blob (-o none: no JSON of the blob's
// properties after it), `download-batch --pattern '<prefix>/*'` writes the
// matching blobs under --destination, names as paths. DuckDB reads az://
// through its azure extension with the credential chain of the account:
// CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME ...)
// (https://duckdb.org/docs/stable/core_extensions/azure).
func (w *mdWriter) quickCLI() quickCLI {
	b := w.in.Bucket
	switch w.in.Store {
	case loadsql.StoreGCS:
		uri := func(key string) string { return "gs://" + b + "/" + key }
		return quickCLI{
			tool:    "the gcloud CLI (`gcloud storage`)",
			name:    "GCS",
			copyCmd: "gcloud storage rsync",
			secret:  `CREATE SECRET (TYPE gcs, KEY_ID '$GCS_HMAC_ID', SECRET '$GCS_HMAC_SECRET');`,
			secretText: []string{"the GCS secret, `CREATE SECRET (TYPE gcs, ...)`, with an HMAC key of a service account",
				"that may read the bucket in `GCS_HMAC_ID` and `GCS_HMAC_SECRET` (DuckDB reads `gs://` through Cloud Storage's",
				"S3-compatible API, which takes HMAC keys only; DuckDB installs its `httpfs` extension the first time)."},
			days: func(dir string) string {
				return "gcloud storage ls " + uri(dir) + " | sed -n 's#.*/dt=\\(.*\\)/$#\\1#p'"
			},
			cat:   func(key string) string { return "gcloud storage cat " + uri(key) },
			fetch: func(key, file string) string { return "gcloud storage cp " + uri(key) + " " + file },
			sync: func(prefix string) string {
				return "gcloud storage rsync --recursive " + uri(prefix) + " ./copy/" + prefix
			},
			base: "gs://" + b + "/",
		}
	case loadsql.StoreAzure:
		a := w.in.AzureAccount
		opts := " --account-name " + a + " --container-name " + b + " --auth-mode login"
		return quickCLI{
			tool:    "the Azure CLI (`az storage blob`, signed in with `az login`)",
			name:    "Azure",
			copyCmd: "az storage blob download-batch",
			secret:  `CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME '` + a + `');`,
			secretText: []string{"the Azure secret, `CREATE SECRET (TYPE azure, PROVIDER credential_chain, ...)`, which",
				"signs in as the Azure CLI does (DuckDB installs its `azure` extension the first time)."},
			days: func(dir string) string {
				return "az storage blob list" + opts + " --prefix " + dir + " --delimiter / --num-results '*' --query '[].name' -o tsv | sed -n 's#.*/dt=\\(.*\\)/$#\\1#p'"
			},
			cat: func(key string) string {
				return "az storage blob download" + opts + " --name " + key + " --file /dev/stdout -o none"
			},
			fetch: func(key, file string) string {
				return "az storage blob download" + opts + " --name " + key + " --file " + file + " -o none"
			},
			sync: func(prefix string) string {
				return "mkdir -p ./copy && az storage blob download-batch --account-name " + a + " --source " + b +
					" --pattern '" + prefix + "/*' --destination ./copy --auth-mode login -o none"
			},
			base: "az://" + a + ".blob.core.windows.net/" + b + "/",
		}
	}
	uri := func(key string) string { return "s3://" + b + "/" + key }
	return quickCLI{
		tool:   "the AWS CLI",
		secret: `CREATE SECRET (TYPE s3, PROVIDER credential_chain);`,
		name:   "S3",
		days: func(dir string) string {
			return "aws s3 ls " + uri(dir) + " | sed -n 's#.*PRE dt=\\(.*\\)/#\\1#p'"
		},
		cat:   func(key string) string { return "aws s3 cp " + uri(key) + " -" },
		fetch: func(key, file string) string { return "aws s3 cp --quiet " + uri(key) + " " + file },
		sync:  func(prefix string) string { return "aws s3 sync " + uri(prefix) + " ./copy/" + prefix },
		base:  "s3://" + b + "/",
	}
}

// quickStart is the README's first section: the things a data engineer
// does first (find the newest complete day, see what it holds, load it,
// load every day and what changed), with the store's own CLI and DuckDB,
// on the bucket and on a local copy. No day is written into it: the README
// is not rewritten as days arrive, so the commands find the day.
func (w *mdWriter) quickStart() {
	root, prefix := w.root, strings.TrimSuffix(w.in.Prefix, "/")
	cli := w.quickCLI()
	d := w.in.Datasets[0]
	ds := d.Name
	// The dataset's folder under its current contract (v1/events, v2/events).
	folder := strings.TrimPrefix(layout.ContractRoot(w.in.Prefix, d.ContractVersion()), root) + ds
	copyRoot := "./copy/" + root
	secret := cli.secret
	w.h2("Quick start")
	if w.in.Store == "" || w.in.Store == loadsql.StoreS3 {
		w.p("With the AWS CLI and DuckDB; the dataset `"+ds+"` is an example. Each `duckdb` below is a new",
			"process, so each command first gives it the S3 secret (`"+secret+"`, your usual AWS",
			"credentials; DuckDB installs its `httpfs` and `aws` extensions the first time).")
	} else {
		w.p(append([]string{"With " + cli.tool + " and DuckDB; the dataset `" + ds + "` is an example. Each `duckdb` below",
			"is a new process, so each command first gives it"}, cli.secretText...)...)
	}
	w.p("**0. The newest complete day.** A day's delivery manifest says `\"complete\": true` once every",
		"dataset of the day is delivered; this finds the newest such day:")
	w.block("sh",
		"day=$("+cli.days(root+"_manifests/")+" | sort -r | while read d; do",
		"  "+cli.cat(root+"_manifests/dt=$d/manifest.json")+" | grep -q '\"complete\": true' && { echo \"$d\"; break; }",
		"done); echo \"$day\"")
	w.p("**1. What does a day hold?** Its delivery manifest lists each dataset delivered (with its",
		"`generation` and rows) and what is missing and why:")
	w.block("sh", cli.cat(root+"_manifests/dt=$day/manifest.json")+" | grep -E '\"(complete|name|generation|rows|code)\"'")
	w.p("**2. Load one day.** Each partition carries its own load script; it replaces the day in your",
		"table, so running it again changes nothing:")
	w.block("sh", "{ echo \""+secret+"\"; "+cli.cat(root+folder+"/dt=$day/_load/duckdb.sql")+"; } | duckdb exports.duckdb")
	w.p("In a warehouse, run the partition's script for it the same way, for example `_load/snowflake.sql`",
		"in Snowflake: its first lines say which external stage on the bucket it reads from.")
	w.p("**3. Load every day, and what changed.** Loop over the delivery manifests: a 30-day backfill is",
		"this loop, and running it again reloads only what you choose. A day delivered again (late data, a",
		"re-export) has a higher `generation` in its delivery manifest than the one you loaded: load that",
		"day again.")
	w.block("sh",
		"for day in $("+cli.days(root+"_manifests/")+"); do",
		"  "+cli.fetch(root+folder+"/dt=$day/_load/duckdb.sql", "load.sql")+" &&",
		"    { echo \""+secret+"\"; cat load.sql; } | duckdb exports.duckdb || echo \"$day: not loaded\"",
		"done")
	w.p(QuickStartCopyHeading+" (no "+cli.name+" secret needed: the scripts' `"+cli.base+"` paths are pointed at",
		"the copy with `sed`; a day without the dataset has no script and is reported as not loaded):")
	w.block("sh",
		cli.sync(prefix),
		"day=$(ls "+copyRoot+"_manifests/ | sed -n 's#^dt=##p' | sort -r | while read d; do",
		"  grep -q '\"complete\": true' "+copyRoot+"_manifests/dt=$d/manifest.json && { echo \"$d\"; break; }",
		"done); echo \"$day\"",
		"grep -E '\"(complete|name|generation|rows|code)\"' "+copyRoot+"_manifests/dt=$day/manifest.json",
		"sed 's#"+cli.base+"#./copy/#g' "+copyRoot+folder+"/dt=$day/_load/duckdb.sql | duckdb exports.duckdb",
		"for day in $(ls "+copyRoot+"_manifests/ | sed -n 's#^dt=##p'); do",
		"  f="+copyRoot+folder+"/dt=$day/_load/duckdb.sql",
		"  [ -f \"$f\" ] && sed 's#"+cli.base+"#./copy/#g' \"$f\" | duckdb exports.duckdb || echo \"$day: not loaded\"",
		"done")
}
