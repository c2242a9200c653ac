package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Enum is an enum value in the JSON form: its schema member name, or its
// number when the schema has no name for it (a file written by a newer
// exporter, or a damaged one).
type Enum struct {
	Name  string // member name, "" when unknown
	Value int64  // numeric value
}

// MarshalJSON writes the name as a string, or the number when the name is
// unknown.
func (e Enum) MarshalJSON() ([]byte, error) {
	if e.Name != "" {
		return json.Marshal(e.Name)
	}
	return strconv.AppendInt(nil, e.Value, 10), nil
}

// UnmarshalJSON reads a name or a number. A name's numeric value is not
// recovered (it is left 0); use the schema package's enum maps for that.
func (e *Enum) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*e = Enum{}
		return json.Unmarshal(b, &e.Name)
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("inspect: enum must be a name or an integer: %w", err)
	}
	*e = Enum{Value: v}
	return nil
}

// String returns the name, or the number in decimal.
func (e Enum) String() string {
	if e.Name != "" {
		return e.Name
	}
	return strconv.FormatInt(e.Value, 10)
}

// schemaEnum is one of pte's enum types (pte.ScalarType, pte.DataLocation, ...).
type schemaEnum interface {
	Known() bool
	String() string
}

// enum builds an Enum from a value of a schema enum: named when the schema
// names it, a bare number otherwise.
func enum(v schemaEnum, num int64) Enum {
	if !v.Known() {
		return Enum{Value: num}
	}
	return Enum{Name: v.String(), Value: num}
}

// Float is a float64 in the JSON form. Finite values are written like
// Python's repr (shortest round-trip digits, "1.0" rather than "1",
// exponent form below 1e-4 and from 1e16); NaN and the infinities are the
// strings "nan", "inf" and "-inf", which JSON numbers cannot express.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	return appendFloat(nil, float64(f)), nil
}

// UnmarshalJSON accepts a number or one of "nan", "inf", "-inf".
func (f *Float) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, ok := map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1)}[s]
		if !ok {
			return fmt.Errorf("inspect: bad double %q", s)
		}
		*f = Float(v)
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

func appendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, `"nan"`...)
	case math.IsInf(v, 1):
		return append(dst, `"inf"`...)
	case math.IsInf(v, -1):
		return append(dst, `"-inf"`...)
	}
	// The decimal exponent of the shortest representation decides the form.
	e := strconv.AppendFloat(nil, v, 'e', -1, 64)
	i := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[i+1:]))
	if exp < -4 || exp >= 16 {
		return append(dst, e...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
	if bytes.IndexByte(dst[start:], '.') < 0 {
		dst = append(dst, ".0"...)
	}
	return dst
}

// Digest is an optional SHA-256 digest member. The zero Digest means that
// hashing was not requested: the member is left out (it is tagged
// omitzero). With hashing on, a digest is either the lowercase hex string or
// null when the bytes could not be located in the file.
type Digest struct {
	Hex         string // lowercase hex; "" when not computed
	Unavailable bool   // hashing was on but the bytes could not be read
}

// IsZero reports whether hashing was not requested.
func (d Digest) IsZero() bool { return d.Hex == "" && !d.Unavailable }

// MarshalJSON writes the hex string, or null when unavailable.
func (d Digest) MarshalJSON() ([]byte, error) {
	if d.Hex == "" {
		return []byte("null"), nil
	}
	return json.Marshal(d.Hex)
}

// UnmarshalJSON reads a hex string or null.
func (d *Digest) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = Digest{Unavailable: true}
		return nil
	}
	*d = Digest{}
	return json.Unmarshal(b, &d.Hex)
}

// Marshal returns the JSON form of v (a *Document, *Program or any value of
// this package) indented by two spaces and ending in a newline. Unlike
// json.Marshal it leaves <, > and & unescaped.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := Encode(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Encode writes the JSON form of v to w, as Marshal does. The value is
// indented on its way to w, so that the indented text is never held in
// memory; a *Document is written plan by plan, as WriteJSON writes it.
func Encode(w io.Writer, v any) error {
	if doc, ok := v.(*Document); ok && doc != nil {
		return writeDocument(w, doc, nil, nil)
	}
	ind := &indenter{w: bufio.NewWriterSize(w, 64<<10)}
	enc := json.NewEncoder(ind)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return ind.w.Flush()
}

// indenter rewrites the compact JSON written to it with two-space
// indentation, as json.Indent(dst, src, "", "  ") does, keeping its state
// across writes.
type indenter struct {
	w        *bufio.Writer
	depth    int
	inString bool
	escape   bool
	// open is set after '{' or '[': an empty object or array stays on
	// its line.
	open bool
}

func (ind *indenter) Write(p []byte) (int, error) {
	w := ind.w
	for _, c := range p {
		if ind.open {
			ind.open = false
			if c == '}' || c == ']' {
				ind.depth--
				w.WriteByte(c)
				continue
			}
			ind.newline()
		}
		if ind.inString {
			w.WriteByte(c)
			switch {
			case ind.escape:
				ind.escape = false
			case c == '\\':
				ind.escape = true
			case c == '"':
				ind.inString = false
			}
			continue
		}
		switch c {
		case '"':
			ind.inString = true
			w.WriteByte(c)
		case '{', '[':
			w.WriteByte(c)
			ind.depth++
			ind.open = true
		case ',':
			w.WriteByte(c)
			ind.newline()
		case ':':
			w.WriteString(": ")
		case '}', ']':
			ind.depth--
			ind.newline()
			w.WriteByte(c)
		case ' ', '\t', '\r':
			// Compact JSON has none outside strings; json.Indent drops them.
		default:
			w.WriteByte(c)
		}
	}
	// A write error is sticky in bufio.Writer and reported by Flush.
	return len(p), nil
}

// newline starts a line at the current depth.
func (ind *indenter) newline() {
	ind.w.WriteByte('\n')
	for range ind.depth {
		ind.w.WriteString("  ")
	}
}
