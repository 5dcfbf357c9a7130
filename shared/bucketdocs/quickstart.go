package bucketdocs

import "strings"

// quickStart is the README's first section: the three things a data
// engineer does first (is a day ready, load one day, load every day and
// what changed), in DuckDB and one warehouse, with a local copy of the
// bucket too.
func (w *mdWriter) quickStart() {
	b, root := w.in.Bucket, w.root
	ds := w.in.Datasets[0].Name
	s3root := "s3://" + b + "/" + root
	w.h2("Quick start")
	w.p("Three commands, with the AWS CLI and DuckDB (`CREATE SECRET (TYPE s3, PROVIDER credential_chain)`",
		"once in DuckDB for `s3://` reads); the dataset `"+ds+"` and the day are examples.")
	w.p("**1. Is a day ready?** Its delivery manifest says `\"complete\": true` when every dataset of the day",
		"is delivered, and lists what is missing and why otherwise:")
	w.block("sh", "aws s3 cp "+s3root+"_manifests/dt=2026-11-20/manifest.json - | grep -E '\"(complete|name|generation|code)\"'")
	w.p("**2. Load one day.** Each partition carries its own load script; it replaces the day in your",
		"table, so running it again changes nothing:")
	w.block("sh", "aws s3 cp "+s3root+ds+"/dt=2026-11-20/_load/duckdb.sql - | duckdb exports.duckdb")
	w.p("In a warehouse, run the partition's script for it the same way, for example `_load/snowflake.sql`",
		"in Snowflake: its first lines say which external stage on the bucket it reads from.")
	w.p("**3. Load every day, and what changed.** Loop over the delivery manifests: a 30-day backfill is",
		"this loop, and running it again reloads only what you choose. A day delivered again (late data, a",
		"re-export) has a higher `generation` in its delivery manifest than the one you loaded: load that",
		"day again.")
	w.block("sh",
		"for day in $(aws s3 ls "+s3root+"_manifests/ | sed -n 's#.*PRE dt=\\(.*\\)/#\\1#p'); do",
		"  aws s3 cp "+s3root+ds+"/dt=$day/_load/duckdb.sql - | duckdb exports.duckdb || echo \"$day: not loaded\"",
		"done")
	w.p("On a local copy of the bucket (`aws s3 sync s3://"+b+"/"+strings.TrimSuffix(root, "/")+" ./copy/"+strings.TrimSuffix(root, "/")+"`), point the",
		"script's file list at it:")
	w.block("sh", "sed 's#s3://"+b+"/#./copy/#g' ./copy/"+root+ds+"/dt=2026-11-20/_load/duckdb.sql | duckdb exports.duckdb")
}
