package bucketdocs

import (
	"strings"

	"github.com/daybook-dev/daybook/shared/layout"
)

// QuickStartCopyHeading introduces the Quick start's block of the same
// steps on a local copy of the bucket; a test finds that block by it and
// runs it as written.
const QuickStartCopyHeading = "**The same steps on a local copy of the bucket**"

// duckdbSecret is the statement that lets one DuckDB process read s3://
// with the usual AWS credentials (environment, profile, instance role).
// Each piped `duckdb` is a new process, so each gets it.
const duckdbSecret = `CREATE SECRET (TYPE s3, PROVIDER credential_chain);`

// quickStart is the README's first section: the things a data engineer
// does first (find the newest complete day, see what it holds, load it,
// load every day and what changed), with the AWS CLI and DuckDB, on the
// bucket and on a local copy. No day is written into it: the README is
// not rewritten as days arrive, so the commands find the day.
func (w *mdWriter) quickStart() {
	b, root, prefix := w.in.Bucket, w.root, strings.TrimSuffix(w.in.Prefix, "/")
	d := w.in.Datasets[0]
	ds := d.Name
	// The dataset's folder under its current contract (v1/events, v2/events).
	folder := strings.TrimPrefix(layout.ContractRoot(w.in.Prefix, d.ContractVersion()), root) + ds
	s3root := "s3://" + b + "/" + root
	copyRoot := "./copy/" + root
	w.h2("Quick start")
	w.p("With the AWS CLI and DuckDB; the dataset `"+ds+"` is an example. Each `duckdb` below is a new",
		"process, so each command first gives it the S3 secret (`"+duckdbSecret+"`, your usual AWS",
		"credentials; DuckDB installs its `httpfs` and `aws` extensions the first time).")
	w.p("**0. The newest complete day.** A day's delivery manifest says `\"complete\": true` once every",
		"dataset of the day is delivered; this finds the newest such day:")
	w.block("sh",
		"day=$(aws s3 ls "+s3root+"_manifests/ | sed -n 's#.*PRE dt=\\(.*\\)/#\\1#p' | sort -r | while read d; do",
		"  aws s3 cp "+s3root+"_manifests/dt=$d/manifest.json - | grep -q '\"complete\": true' && { echo \"$d\"; break; }",
		"done); echo \"$day\"")
	w.p("**1. What does a day hold?** Its delivery manifest lists each dataset delivered (with its",
		"`generation` and rows) and what is missing and why:")
	w.block("sh", "aws s3 cp "+s3root+"_manifests/dt=$day/manifest.json - | grep -E '\"(complete|name|generation|rows|code)\"'")
	w.p("**2. Load one day.** Each partition carries its own load script; it replaces the day in your",
		"table, so running it again changes nothing:")
	w.block("sh", "{ echo \""+duckdbSecret+"\"; aws s3 cp "+s3root+folder+"/dt=$day/_load/duckdb.sql -; } | duckdb exports.duckdb")
	w.p("In a warehouse, run the partition's script for it the same way, for example `_load/snowflake.sql`",
		"in Snowflake: its first lines say which external stage on the bucket it reads from.")
	w.p("**3. Load every day, and what changed.** Loop over the delivery manifests: a 30-day backfill is",
		"this loop, and running it again reloads only what you choose. A day delivered again (late data, a",
		"re-export) has a higher `generation` in its delivery manifest than the one you loaded: load that",
		"day again.")
	w.block("sh",
		"for day in $(aws s3 ls "+s3root+"_manifests/ | sed -n 's#.*PRE dt=\\(.*\\)/#\\1#p'); do",
		"  aws s3 cp --quiet "+s3root+folder+"/dt=$day/_load/duckdb.sql load.sql &&",
		"    { echo \""+duckdbSecret+"\"; cat load.sql; } | duckdb exports.duckdb || echo \"$day: not loaded\"",
		"done")
	w.p(QuickStartCopyHeading+" (no S3 secret needed: the scripts' `s3://"+b+"/` paths are pointed at",
		"the copy with `sed`; a day without the dataset has no script and is reported as not loaded):")
	w.block("sh",
		"aws s3 sync s3://"+b+"/"+prefix+" ./copy/"+prefix,
		"day=$(ls "+copyRoot+"_manifests/ | sed -n 's#^dt=##p' | sort -r | while read d; do",
		"  grep -q '\"complete\": true' "+copyRoot+"_manifests/dt=$d/manifest.json && { echo \"$d\"; break; }",
		"done); echo \"$day\"",
		"grep -E '\"(complete|name|generation|rows|code)\"' "+copyRoot+"_manifests/dt=$day/manifest.json",
		"sed 's#s3://"+b+"/#./copy/#g' "+copyRoot+folder+"/dt=$day/_load/duckdb.sql | duckdb exports.duckdb",
		"for day in $(ls "+copyRoot+"_manifests/ | sed -n 's#^dt=##p'); do",
		"  f="+copyRoot+folder+"/dt=$day/_load/duckdb.sql",
		"  [ -f \"$f\" ] && sed 's#s3://"+b+"/#./copy/#g' \"$f\" | duckdb exports.duckdb || echo \"$day: not loaded\"",
		"done")
}
