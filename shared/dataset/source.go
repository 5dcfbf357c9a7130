package dataset

import (
	"errors"
	"regexp"
	"strings"
)

// DefaultSource is the name of the deployment's default source: the one a
// dataset that names no source reads.
const DefaultSource = "default"

// SourceName returns the name of the source the dataset reads: Source, or
// DefaultSource when it names none.
func (d Dataset) SourceName() string {
	if d.Source == "" {
		return DefaultSource
	}
	return d.Source
}

var (
	sourceNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}[a-z0-9]$|^[a-z]$`)
	shardNameRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9_]{0,30}[a-z0-9])?$`)
)

// ValidSourceName checks a source (or shard) name: lower snake case, at
// most 32 characters, no double underscore (it separates the source from
// the shard in environment variable names: SOURCE_DSN_<SOURCE>__<SHARD>),
// and not starting with "parameter" (SOURCE_DSN_PARAMETER_<SOURCE> names
// an SSM parameter).
func ValidSourceName(name string) error {
	switch {
	case !sourceNameRE.MatchString(name):
		return errors.New("want lower snake case, 1 to 32 characters, starting with a letter and not ending with _")
	case strings.Contains(name, "__"):
		return errors.New("no double underscore (it separates a source from its shard in SOURCE_DSN_<SOURCE>__<SHARD>)")
	case strings.HasPrefix(name, "parameter"):
		return errors.New(`must not start with "parameter" (SOURCE_DSN_PARAMETER_<SOURCE> names an SSM parameter)`)
	}
	return nil
}

// ValidShardName checks a shard name (an account's source_shard): lower
// case letters, digits and single underscores, at most 32 characters, not
// beginning or ending with _.
func ValidShardName(name string) error {
	switch {
	case !shardNameRE.MatchString(name):
		return errors.New("want lower case letters, digits and _, 1 to 32 characters, not beginning or ending with _")
	case strings.Contains(name, "__"):
		return errors.New("no double underscore (it separates a source from its shard in SOURCE_DSN_<SOURCE>__<SHARD>)")
	}
	return nil
}
