package dataset

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// The catalog file's own form: what `daybook catalog init` prints and
// appends, and README's "Bring your own tables" shows. Keys come in the
// order a reader looks for them, columns one per line as flow mappings;
// every scalar that is not a plain word is a JSON string, which YAML reads
// as the same double-quoted string. Parse reads it back to the same
// datasets (TestYAMLRoundTrip).

// CatalogYAML renders a whole catalog file holding ds.
func CatalogYAML(ds []Dataset) []byte {
	b := []byte("datasets:\n")
	return AppendYAML(b, ds, 2)
}

// AppendYAML appends ds to b as the items of a catalog's datasets list,
// each "- " indented by indent spaces.
func AppendYAML(b []byte, ds []Dataset, indent int) []byte {
	for _, d := range ds {
		b = appendDataset(b, d, indent)
	}
	return b
}

func appendDataset(b []byte, d Dataset, indent int) []byte {
	first := true
	pad := strings.Repeat(" ", indent+2)
	key := func(k string) {
		if first {
			b = append(b, strings.Repeat(" ", indent)+"- "...)
			first = false
		} else {
			b = append(b, pad...)
		}
		b = append(b, k+":"...)
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = append(b, ' ')
			b = appendScalar(b, v)
			b = append(b, '\n')
		}
	}
	str("name", d.Name)
	key("version")
	b = append(b, " "+strconv.Itoa(d.Version)+"\n"...)
	str("description", d.Description)
	str("partition", d.Partition)
	str("partition_column", d.PartitionColumn)
	str("relation", d.Relation)
	str("source", d.Source)
	str("contract", d.Contract)
	str("mode", d.Mode)
	str("read", d.Read)
	str("id_column", d.IDColumn)
	str("order_column", d.OrderColumn)
	str("tenant_column", d.TenantColumn)
	str("tenant_type", d.TenantType)
	if len(d.OrderBy) > 0 {
		key("order_by")
		b = append(b, " ["...)
		for i, c := range d.OrderBy {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendScalar(b, c)
		}
		b = append(b, "]\n"...)
	}
	str("changed_column", d.ChangedColumn)
	key("columns")
	b = append(b, '\n')
	for _, c := range d.Columns {
		b = append(b, pad+"  - {name: "...)
		b = appendScalar(b, c.Name)
		b = append(b, ", type: "...)
		b = appendScalar(b, c.Type.String())
		if c.Nullable {
			b = append(b, ", nullable: true"...)
		}
		switch c.Dictionary {
		case DictionaryOn:
			b = append(b, ", dictionary: true"...)
		case DictionaryOff:
			b = append(b, ", dictionary: false"...)
		}
		if c.SourceTimeZone != "" {
			b = append(b, ", source_time_zone: "...)
			b = appendScalar(b, c.SourceTimeZone)
		}
		if c.Since > 1 {
			b = append(b, ", since: "+strconv.Itoa(c.Since)...)
		}
		if c.NullableSince > 0 {
			b = append(b, ", nullable_since: "+strconv.Itoa(c.NullableSince)...)
		}
		if c.Description != "" {
			b = append(b, ", description: "...)
			b = appendScalar(b, c.Description)
		}
		b = append(b, "}\n"...)
	}
	for _, m := range []struct {
		name    string
		queries map[string]string
	}{{"queries", d.Queries}, {"fingerprint", d.Fingerprint}} {
		if len(m.queries) == 0 {
			continue
		}
		key(m.name)
		b = append(b, '\n')
		for _, dialect := range Dialects {
			if q, ok := m.queries[dialect]; ok {
				b = append(b, pad+"  "+dialect+": "...)
				b = appendScalar(b, q)
				b = append(b, '\n')
			}
		}
	}
	return b
}

// plainRE matches the scalars written without quotes: words a YAML reader
// takes as the same string in a block or a flow mapping.
var plainRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./+-]*$`)

// yamlWords are the plain scalars YAML 1.1 (which the loader reads) takes
// for something other than a string.
var yamlWords = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true, "true": true, "false": true, "null": true}

func appendScalar(b []byte, s string) []byte {
	if plainRE.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return append(b, s...)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
