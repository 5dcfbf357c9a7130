package dataset

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Kind is the logical type of a column, independent of any file format.
type Kind string

// The logical kinds a column may declare (F5). Their Go value model is
// documented on Dataset.Coerce.
const (
	KindDate      Kind = "date"
	KindTimestamp Kind = "timestamp"
	KindInt64     Kind = "int64"
	KindDouble    Kind = "double"
	KindDecimal   Kind = "decimal"
	KindBoolean   Kind = "boolean"
	KindString    Kind = "string"
	KindJSON      Kind = "json"
)

// MaxDecimalPrecision is the widest decimal every target engine loads
// (Athena, BigQuery BIGNUMERIC aside, Snowflake and Redshift stop at 38).
const MaxDecimalPrecision = 38

// Type is a column's declared type. Precision and Scale are only set for
// decimals. It marshals to the text form used in the catalog file, e.g.
// "timestamp" or "decimal(18,2)".
type Type struct {
	Kind Kind
	// Elem is a list's element kind (see KindList); "" otherwise.
	Elem      Kind
	Precision int
	Scale     int
}

// DecimalType returns the decimal(p,s) type.
func DecimalType(precision, scale int) Type {
	return Type{Kind: KindDecimal, Precision: precision, Scale: scale}
}

// ParseType parses the text form of a type.
func ParseType(s string) (Type, error) {
	s = strings.TrimSpace(s)
	if t, ok, err := parseList(s); ok {
		return t, err
	}
	switch k := Kind(s); k {
	case KindDate, KindTimestamp, KindInt64, KindDouble, KindBoolean, KindString, KindJSON, KindBinary:
		return Type{Kind: k}, nil
	}
	inner, ok := strings.CutPrefix(s, "decimal(")
	if ok {
		inner, ok = strings.CutSuffix(inner, ")")
	}
	if !ok {
		return Type{}, fmt.Errorf("parse type %q: unknown type", s)
	}
	ps, ss, ok := strings.Cut(inner, ",")
	if !ok {
		return Type{}, fmt.Errorf("parse type %q: decimal needs precision and scale", s)
	}
	p, err1 := strconv.Atoi(strings.TrimSpace(ps))
	sc, err2 := strconv.Atoi(strings.TrimSpace(ss))
	if err1 != nil || err2 != nil {
		return Type{}, fmt.Errorf("parse type %q: decimal precision and scale must be integers", s)
	}
	t := DecimalType(p, sc)
	if err := t.validate(); err != nil {
		return Type{}, fmt.Errorf("parse type %q: %w", s, err)
	}
	return t, nil
}

func (t Type) validate() error {
	if t.Kind == KindList {
		return t.validateList()
	}
	if t.Elem != "" {
		return fmt.Errorf("type %s has no element type", t.Kind)
	}
	if t.Kind != KindDecimal {
		if t.Precision != 0 || t.Scale != 0 {
			return fmt.Errorf("type %s takes no precision or scale", t.Kind)
		}
		return nil
	}
	if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
		return fmt.Errorf("decimal precision %d outside 1..%d", t.Precision, MaxDecimalPrecision)
	}
	if t.Scale < 0 || t.Scale > t.Precision {
		return fmt.Errorf("decimal scale %d outside 0..%d", t.Scale, t.Precision)
	}
	return nil
}

// String returns the text form, e.g. "decimal(18,2)".
func (t Type) String() string {
	switch t.Kind {
	case KindDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case KindList:
		return "list<" + t.ElemType().String() + ">"
	}
	return string(t.Kind)
}

// MarshalText implements encoding.TextMarshaler.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Type) UnmarshalText(b []byte) error {
	p, err := ParseType(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// Decimal is an exact fixed-point number: unscaled * 10^-scale. Values that fit
// in int64 (every decimal up to precision 18) never allocate; wider ones are
// kept in a big.Int.
type Decimal struct {
	small int64
	big   *big.Int // non-nil only when the unscaled value does not fit int64
	scale int32
}

// NewDecimal returns unscaled * 10^-scale.
func NewDecimal(unscaled int64, scale int) Decimal {
	return Decimal{small: unscaled, scale: int32(scale)}
}

// NewDecimalBig returns unscaled * 10^-scale; unscaled is copied.
func NewDecimalBig(unscaled *big.Int, scale int) Decimal {
	if unscaled.IsInt64() {
		return Decimal{small: unscaled.Int64(), scale: int32(scale)}
	}
	return Decimal{big: new(big.Int).Set(unscaled), scale: int32(scale)}
}

// ParseDecimal parses a plain decimal literal ("-12.30", "7", "1e3" is refused)
// at the given scale. It pads missing fractional digits and refuses extra
// non-zero ones, because rounding would silently change money.
func ParseDecimal(s string, scale int) (Decimal, error) {
	orig := s
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return Decimal{}, fmt.Errorf("parse decimal %q: empty", orig)
	}
	trimmed := strings.TrimRight(frac, "0")
	if len(trimmed) > scale {
		return Decimal{}, fmt.Errorf("parse decimal %q: more than %d fractional digits", orig, scale)
	}
	digits := intPart + trimmed + strings.Repeat("0", scale-len(trimmed))
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return Decimal{}, fmt.Errorf("parse decimal %q: not a decimal number", orig)
		}
	}
	for i := 0; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return Decimal{}, fmt.Errorf("parse decimal %q: not a decimal number", orig)
		}
	}
	if digits == "" {
		digits = "0"
	}
	if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
		if neg {
			n = -n
		}
		return Decimal{small: n, scale: int32(scale)}, nil
	}
	b, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Decimal{}, fmt.Errorf("parse decimal %q: not a decimal number", orig)
	}
	if neg {
		b.Neg(b)
	}
	return NewDecimalBig(b, scale), nil
}

// Scale returns the number of fractional digits.
func (d Decimal) Scale() int { return int(d.scale) }

// Int64 returns the unscaled value when it fits int64.
func (d Decimal) Int64() (int64, bool) { return d.small, d.big == nil }

// BigInt returns the unscaled value as a new big.Int.
func (d Decimal) BigInt() *big.Int {
	if d.big != nil {
		return new(big.Int).Set(d.big)
	}
	return big.NewInt(d.small)
}

// Digits returns the number of significant decimal digits of the unscaled
// value, used to check it against the declared precision.
func (d Decimal) Digits() int {
	var s string
	if d.big != nil {
		s = new(big.Int).Abs(d.big).String()
	} else if d.small == math.MinInt64 {
		return 19
	} else {
		n := d.small
		if n < 0 {
			n = -n
		}
		s = strconv.FormatInt(n, 10)
	}
	if s == "0" {
		return 0
	}
	return len(s)
}

// String returns the exact plain form with exactly Scale fractional digits.
func (d Decimal) String() string {
	return string(d.AppendText(nil))
}

// AppendText appends the String form to b without intermediate allocations
// for int64-sized values (the NDJSON hot path).
func (d Decimal) AppendText(b []byte) []byte {
	var digits []byte
	var buf [24]byte
	neg := false
	if d.big != nil {
		neg = d.big.Sign() < 0
		digits = new(big.Int).Abs(d.big).Append(nil, 10)
	} else {
		u := uint64(d.small)
		if d.small < 0 {
			neg = true
			u = uint64(-d.small) // also right for MinInt64 via wraparound
		}
		digits = strconv.AppendUint(buf[:0], u, 10)
	}
	if neg {
		b = append(b, '-')
	}
	sc := int(d.scale)
	if sc == 0 {
		return append(b, digits...)
	}
	if len(digits) <= sc {
		b = append(b, '0', '.')
		for i := len(digits); i < sc; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[:len(digits)-sc]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-sc:]...)
}

// Equal reports whether d and o have the same scale and unscaled value.
func (d Decimal) Equal(o Decimal) bool {
	if d.scale != o.scale {
		return false
	}
	if d.big == nil && o.big == nil {
		return d.small == o.small
	}
	return d.BigInt().Cmp(o.BigInt()) == 0
}

// TypeError is a source column whose type does not map to the column's
// declared type (see docs/types.md): the source changed under the
// dataset, or the dataset was declared wrong. It is found before any row
// is read, and unwraps to ErrRowMismatch, so the partition fails as a
// schema mismatch rather than delivering a file of the wrong type.
type TypeError struct {
	Dataset  string
	Column   string
	Declared string // the declared type, e.g. "decimal(18,2)"
	Found    string // the source's type as it names it, e.g. "numeric(20,10)"
	Reason   string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("dataset %s: column %s: declared %s, source has %s: %s: %v", e.Dataset, e.Column, e.Declared, e.Found, e.Reason, ErrRowMismatch)
}

func (e *TypeError) Unwrap() error { return ErrRowMismatch }
