package encode

// Tuned returns opts with the Parquet dictionary limit and page size set
// for tests, so a file of a few thousand rows has the several pages and the
// dictionary fallback a day of millions has. Zero keeps a default.
func Tuned(opts Options, dictionaryLimit int64, pageBytes int) Options {
	opts.tuning = tuning{dictionaryLimit: dictionaryLimit, pageBytes: pageBytes}
	return opts
}

// Profiles lists the valid profiles, the default first: every one that has
// a name, so a profile added is tested too.
func Profiles() []Profile {
	out := make([]Profile, len(profileNames))
	for i := range out {
		out[i] = Profile(i)
	}
	return out
}
