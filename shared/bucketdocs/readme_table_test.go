package bucketdocs

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/loadsql"
)

// TestTableSection: the README explains the Iceberg tables only to an
// account that has them, with the summary properties, retention and script
// names the table and the scripts really use.
func TestTableSection(t *testing.T) {
	t.Parallel()
	in := goldenInput(t, fileformat.Parquet)
	plain, err := README(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "Iceberg") {
		t.Fatal("an account without a table reads about Iceberg")
	}
	in.Iceberg = true
	b, err := README(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"## Query the table, or load the folders", "s3://" + in.Bucket + "/",
		icetable.PropOperation, icetable.PropDay, icetable.PropGeneration, icetable.PropReason, icetable.PropManifest,
		durationLabel(icetable.DefaultRetention.MaxAge), groupDigits(icetable.DefaultRetention.MaxSnapshots),
		icetable.MetadataDir + "/", icetable.VersionHintName,
		loadsql.TableScriptDuckDB, loadsql.TableScriptSnowflake, loadsql.TableScriptTrino, loadsql.TableScriptSpark} {
		if !strings.Contains(s, want) {
			t.Errorf("the README lacks %q", want)
		}
	}
}
