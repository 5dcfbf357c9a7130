package icetable

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
)

// TestGlueRegistration registers the table in moto's Glue as Athena reads
// an Iceberg table (table_type ICEBERG, metadata_location): refused while
// the database is missing, created once it exists, moved to each newer
// metadata file with the previous one kept, never moved back by a stale
// writer, and a foreign table of the same name left alone.
func TestGlueRegistration(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 2, 50))
	v1 := w.load()
	cfg, err := srv.Config(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	gc := glue.NewFromConfig(cfg)
	db := "analytics_" + strings.ToLower(strings.ReplaceAll(w.b.Name(), "-", "_"))
	reg := Registration{API: gc, Database: db, Name: "events", Location: TableURI(w.b, tb.Location)}
	get := func(name string) *gluetypes.Table {
		t.Helper()
		out, err := gc.GetTable(w.ctx, &glue.GetTableInput{DatabaseName: &db, Name: &name})
		if err != nil {
			t.Fatal(err)
		}
		return out.Table
	}

	if wrote, err := reg.Register(w.ctx, v1); !errors.Is(err, ErrGlueNoDatabase) || wrote {
		t.Fatalf("no database: wrote %v, %v; want ErrGlueNoDatabase", wrote, err)
	}
	if _, err := gc.CreateDatabase(w.ctx, &glue.CreateDatabaseInput{DatabaseInput: &gluetypes.DatabaseInput{Name: &db}}); err != nil {
		t.Fatal(err)
	}
	if wrote, err := reg.Register(w.ctx, v1); err != nil || !wrote {
		t.Fatalf("first registration: wrote %v, %v", wrote, err)
	}
	g := get("events")
	if aws.ToString(g.TableType) != GlueTableType || g.Parameters[GlueParamTableType] != GlueIceberg ||
		g.Parameters[GlueParamMetadata] != v1.MetadataLocation() || aws.ToString(g.StorageDescriptor.Location) != v1.Location() {
		t.Fatalf("registered %s %v at %s", aws.ToString(g.TableType), g.Parameters, aws.ToString(g.StorageDescriptor.Location))
	}
	if cols := g.StorageDescriptor.Columns; len(cols) != len(w.ds.Columns) || aws.ToString(cols[0].Name) != w.ds.Columns[0].Name ||
		cols[0].Parameters[glueFieldID] != "1" || aws.ToString(cols[2].Type) != "timestamp" {
		t.Fatalf("columns %+v", cols)
	}
	if wrote, err := reg.Register(w.ctx, v1); err != nil || wrote {
		t.Fatalf("registering the same metadata again: wrote %v, %v; want no write", wrote, err)
	}

	mustAdd(t, tb, w.export(day2, 1, 1, 30))
	v2 := w.load()
	if wrote, err := reg.Register(w.ctx, v2); err != nil || !wrote {
		t.Fatalf("newer metadata: wrote %v, %v", wrote, err)
	}
	if g := get("events"); g.Parameters[GlueParamMetadata] != v2.MetadataLocation() || g.Parameters[GlueParamPrevious] != v1.MetadataLocation() {
		t.Fatalf("after the second commit: %v", g.Parameters)
	}
	// A writer that loaded v1 and registers late does not move the table back.
	if wrote, err := reg.Register(w.ctx, v1); err != nil || wrote {
		t.Fatalf("stale registration: wrote %v, %v; want no write", wrote, err)
	}
	if g := get("events"); g.Parameters[GlueParamMetadata] != v2.MetadataLocation() {
		t.Fatalf("a stale registration moved the table to %s", g.Parameters[GlueParamMetadata])
	}

	// A table of the same name that is not this one is left as it is.
	other := "profiles"
	if _, err := gc.CreateTable(w.ctx, &glue.CreateTableInput{DatabaseName: &db, TableInput: &gluetypes.TableInput{Name: &other,
		TableType: aws.String("EXTERNAL_TABLE"), StorageDescriptor: &gluetypes.StorageDescriptor{Location: aws.String("s3://elsewhere/profiles")}}}); err != nil {
		t.Fatal(err)
	}
	if wrote, err := (Registration{API: gc, Database: db, Name: other, Location: TableURI(w.b, tb.Location)}).Register(w.ctx, v2); !errors.Is(err, ErrGlueForeign) || wrote {
		t.Fatalf("foreign table: wrote %v, %v; want ErrGlueForeign", wrote, err)
	}
	if g := get(other); g.Parameters[GlueParamMetadata] != "" {
		t.Fatalf("the foreign table was changed: %v", g.Parameters)
	}
}

// TestGlueRefusesAnotherAccountsTable: accounts written with daybook's own
// role share the deployment's Glue catalog. The second account's
// registration names the first account's Glue table, and its table's
// metadata names the first account's location (planted). The entry is
// compared with where the second account's table must be, not with what
// its metadata says, so it is left alone (ErrGlueForeign). Before, the
// planted location matched the entry's, and the first account's Glue table
// was pointed at the second account's metadata file.
func TestGlueRefusesAnotherAccountsTable(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 1, 20))
	mustAdd(t, tb, w.export(day2, 1, 1, 20))
	cfg, err := srv.Config(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	gc := glue.NewFromConfig(cfg)
	db := "shared_" + strings.ToLower(strings.ReplaceAll(w.b.Name(), "-", "_"))
	if _, err := gc.CreateDatabase(w.ctx, &glue.CreateDatabaseInput{DatabaseInput: &gluetypes.DatabaseInput{Name: &db}}); err != nil {
		t.Fatal(err)
	}
	// The first account's table, registered as its own.
	w.otherAccount()
	bob, err := Load(w.ctx, w.b, otherPrefix+"/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	name := "bob_events"
	if _, err := (Registration{API: gc, Database: db, Name: name, Location: TableURI(w.b, otherPrefix+"/v1/events")}).Register(w.ctx, bob); err != nil {
		t.Fatal(err)
	}
	// The second account's metadata, planted with the first's location, as
	// an older loader took it (the load now refuses it: TestPlantedMetadataStaysInTheTable).
	planted := w.plant(func(m map[string]any) { m["location"] = bob.Location() })
	body, err := w.b.Get(w.ctx, planted, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(body)
	if err != nil {
		t.Fatal(err)
	}
	mine := table.New(table.Identifier{"daybook", "events"}, meta, "s3://"+w.b.Name()+"/"+planted, nil, nil)
	reg := Registration{API: gc, Database: db, Name: name, Location: TableURI(w.b, tb.Location)}
	if wrote, err := reg.Register(w.ctx, mine); !errors.Is(err, ErrGlueForeign) || wrote {
		t.Errorf("registering over the other account's table: wrote %v, %v; want ErrGlueForeign", wrote, err)
	}
	out, err := gc.GetTable(w.ctx, &glue.GetTableInput{DatabaseName: &db, Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Table.Parameters[GlueParamMetadata]; got != bob.MetadataLocation() {
		t.Fatalf("the first account's Glue table points at %s, not its own metadata %s", got, bob.MetadataLocation())
	}
}
