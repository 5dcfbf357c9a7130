package icetable

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/smithy-go"
)

// GlueAPI is the part of the Glue client registration uses.
type GlueAPI interface {
	GetTable(ctx context.Context, in *glue.GetTableInput, opts ...func(*glue.Options)) (*glue.GetTableOutput, error)
	CreateTable(ctx context.Context, in *glue.CreateTableInput, opts ...func(*glue.Options)) (*glue.CreateTableOutput, error)
	UpdateTable(ctx context.Context, in *glue.UpdateTableInput, opts ...func(*glue.Options)) (*glue.UpdateTableOutput, error)
}

var _ GlueAPI = (*glue.Client)(nil)

// What a registration fails with; each error of Register wraps one.
var (
	// ErrGlueDenied: the role may not read or write the Glue table.
	ErrGlueDenied = errors.New("icetable: Glue denied access")
	// ErrGlueNoDatabase: the Glue database does not exist (daybook does not
	// create databases).
	ErrGlueNoDatabase = errors.New("icetable: no such Glue database")
	// ErrGlueForeign: a Glue table of that name exists and is not this
	// Iceberg table (another type or location); it is left alone.
	ErrGlueForeign = errors.New("icetable: the Glue table is another table")
	// ErrGlueRace: another writer changed the Glue table meanwhile.
	ErrGlueRace = errors.New("icetable: the Glue table changed meanwhile")
	// ErrGlue is any other failure of the Glue API.
	ErrGlue = errors.New("icetable: Glue request failed")
)

// The Glue table parameters of an Iceberg table, as Iceberg's own Glue
// catalog writes them and Athena reads them.
const (
	GlueTableType        = "EXTERNAL_TABLE"
	GlueParamTableType   = "table_type"
	GlueIceberg          = "ICEBERG"
	GlueParamMetadata    = "metadata_location"
	GlueParamPrevious    = "previous_metadata_location"
	glueFieldID          = "iceberg.field.id"
	glueFieldOptional    = "iceberg.field.optional"
	glueFieldCurrent     = "iceberg.field.current"
	glueTableDescription = "daybook export: an Apache Iceberg table kept beside the dt= folders"
)

// Registration is a table's entry in a Glue Data Catalog.
type Registration struct {
	API      GlueAPI
	Database string
	Name     string
	// Location is where the table must be, s3://<bucket>/<table location>
	// (TableURI): what the Glue entry is compared with and set to. The
	// metadata's own location is the bucket's content and decides nothing.
	Location string
}

// TableURI is the s3:// URI of the table at location in store: its
// expected location.
func TableURI(store Store, location string) string { return uri(store, location) }

// Register points the Glue table at tbl's current metadata file: it
// creates the table when Glue has none, updates it (with Glue's optimistic
// lock, VersionId) when it names an older metadata version of the same
// table, and leaves it when it names this version or a newer one. It
// returns whether it wrote. A Glue table of that name that is not this
// Iceberg table is never changed (ErrGlueForeign).
func (g Registration) Register(ctx context.Context, tbl *table.Table) (bool, error) {
	loc := tbl.MetadataLocation()
	want := strings.TrimSuffix(g.Location, "/")
	if want == "" || strings.TrimSuffix(tbl.Location(), "/") != want || !strings.HasPrefix(loc, want+"/"+MetadataDir+"/") {
		return false, fmt.Errorf("%w: the table at %s (metadata %s) is not the table at %s", ErrGlueForeign, tbl.Location(), loc, cmp.Or(want, "no location"))
	}
	got, err := g.API.GetTable(ctx, &glue.GetTableInput{DatabaseName: &g.Database, Name: &g.Name})
	if err != nil && !isGlue(err, "EntityNotFoundException") {
		return false, g.wrap("read", err)
	}
	if err != nil {
		in := &glue.CreateTableInput{DatabaseName: &g.Database, TableInput: g.input(tbl, nil)}
		if _, err := g.API.CreateTable(ctx, in); err != nil {
			return false, g.wrap("create", err)
		}
		return true, nil
	}
	cur := got.Table
	have := cur.Parameters[GlueParamMetadata]
	if !strings.EqualFold(cur.Parameters[GlueParamTableType], GlueIceberg) || cur.StorageDescriptor == nil ||
		strings.TrimSuffix(aws.ToString(cur.StorageDescriptor.Location), "/") != want {
		return false, fmt.Errorf("%w: %s.%s is %s at %s, not the Iceberg table at %s", ErrGlueForeign, g.Database, g.Name,
			cur.Parameters[GlueParamTableType], location(cur), want)
	}
	if have == loc || VersionOf(have) > VersionOf(loc) {
		return false, nil
	}
	in := &glue.UpdateTableInput{DatabaseName: &g.Database, TableInput: g.input(tbl, cur), VersionId: cur.VersionId}
	if _, err := g.API.UpdateTable(ctx, in); err != nil {
		return false, g.wrap("update", err)
	}
	return true, nil
}

func location(t *gluetypes.Table) string {
	if t.StorageDescriptor == nil {
		return "no location"
	}
	return aws.ToString(t.StorageDescriptor.Location)
}

// input is the Glue table of tbl; prev, when set, is the entry it updates
// (its parameters are kept, its metadata location becomes the previous).
func (g Registration) input(tbl *table.Table, prev *gluetypes.Table) *gluetypes.TableInput {
	params := map[string]string{}
	if prev != nil {
		maps.Copy(params, prev.Parameters)
		params[GlueParamPrevious] = prev.Parameters[GlueParamMetadata]
	}
	params[GlueParamTableType] = GlueIceberg
	params[GlueParamMetadata] = tbl.MetadataLocation()
	return &gluetypes.TableInput{
		Name:        aws.String(g.Name),
		Description: aws.String(glueTableDescription),
		TableType:   aws.String(GlueTableType),
		Parameters:  params,
		StorageDescriptor: &gluetypes.StorageDescriptor{
			Location: aws.String(strings.TrimSuffix(g.Location, "/")),
			Columns:  glueColumns(tbl.Schema()),
		},
	}
}

// glueColumns are the schema's columns as Glue lists them (Hive types),
// with their Iceberg field ids and docs.
func glueColumns(sc *iceberg.Schema) []gluetypes.Column {
	out := make([]gluetypes.Column, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		c := gluetypes.Column{Name: aws.String(f.Name), Type: aws.String(hiveType(f.Type)), Parameters: map[string]string{
			glueFieldID: strconv.Itoa(f.ID), glueFieldOptional: strconv.FormatBool(!f.Required), glueFieldCurrent: "true"}}
		if f.Doc != "" {
			c.Comment = aws.String(f.Doc[:min(len(f.Doc), 255)])
		}
		out = append(out, c)
	}
	return out
}

// hiveType is the Hive name of an Iceberg primitive type (Glue's column
// type).
func hiveType(t iceberg.Type) string {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "boolean"
	case iceberg.Int32Type:
		return "int"
	case iceberg.Int64Type:
		return "bigint"
	case iceberg.Float32Type:
		return "float"
	case iceberg.Float64Type:
		return "double"
	case iceberg.DateType:
		return "date"
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return "timestamp"
	case iceberg.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale())
	case iceberg.BinaryType, iceberg.FixedType:
		return "binary"
	}
	return "string"
}

func isGlue(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

// wrap names a Glue failure by one of the errors above.
func (g Registration) wrap(op string, err error) error {
	named := ErrGlue
	switch {
	case isGlue(err, "AccessDeniedException"):
		named = ErrGlueDenied
	case isGlue(err, "EntityNotFoundException"):
		named = ErrGlueNoDatabase
	case isGlue(err, "ConcurrentModificationException"), isGlue(err, "AlreadyExistsException"):
		named = ErrGlueRace
	}
	return fmt.Errorf("%w: %s Glue table %s.%s: %w", named, op, g.Database, g.Name, err)
}
