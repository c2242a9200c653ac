package export

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// Manifest is a program description read from JSON (see the package
// documentation for the schema): the program and the options it sets.
type Manifest struct {
	Program *Program
	// Options holds the options the manifest sets; callers may override
	// them (pteexport's flags do).
	Options Options
}

// ManifestError reports a manifest that cannot be used. Field is the JSON
// path of the offending value, e.g. "methods[0].engines[1].outputs[0].dtype";
// Line and Column locate JSON syntax errors (0 when unknown).
type ManifestError struct {
	File  string
	Field string
	Line  int
	Col   int
	Msg   string
	Err   error
}

// Error formats the error as "manifest FILE:LINE:COL: FIELD: MSG: CAUSE".
func (e *ManifestError) Error() string {
	var b bytes.Buffer
	b.WriteString("manifest")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *ManifestError) Unwrap() error { return e.Err }

type manifestJSON struct {
	Methods            []*methodJSON   `json:"methods"`
	CompileSpecs       []*specJSON     `json:"compile_specs"`
	Budget             json.RawMessage `json:"weight_streaming_budget_per_engine"`
	TargetDevice       string          `json:"target_device"`
	InlineDelegateData bool            `json:"inline_delegate_data"`
	SegmentAlignment   uint64          `json:"segment_alignment"`
}

type methodJSON struct {
	Name         string        `json:"name"`
	Inputs       []*tensorJSON `json:"inputs"`
	Outputs      []*tensorJSON `json:"outputs"`
	Engines      []*engineJSON `json:"engines"`
	CompileSpecs []*specJSON   `json:"compile_specs"`
}

type tensorJSON struct {
	Name     string  `json:"name"`
	DType    string  `json:"dtype"`
	Shape    []int64 `json:"shape"`
	MaxShape []int64 `json:"max_shape"`
}

// UnmarshalJSON accepts a tensor object or a bare tensor name.
func (t *tensorJSON) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.Name)
	}
	type plain tensorJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode((*plain)(t))
}

type bindingJSON struct {
	Binding  string  `json:"binding"`
	Tensor   string  `json:"tensor"`
	DType    string  `json:"dtype"`
	Shape    []int64 `json:"shape"`
	MaxShape []int64 `json:"max_shape"`
}

// UnmarshalJSON accepts a binding object or a bare name (binding and
// tensor named alike).
func (bj *bindingJSON) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &bj.Binding)
	}
	type plain bindingJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode((*plain)(bj))
}

type aliasJSON struct {
	Output string `json:"output"`
	Input  string `json:"input"`
	Kind   string `json:"kind"`
}

type engineJSON struct {
	Name               string         `json:"name"`
	Engine             string         `json:"engine"`
	Blob               string         `json:"blob"`
	DeviceID           *int           `json:"device_id"`
	HardwareCompatible bool           `json:"hardware_compatible"`
	Inputs             []*bindingJSON `json:"inputs"`
	Outputs            []*bindingJSON `json:"outputs"`
	AliasedIO          []*aliasJSON   `json:"aliased_io"`
	SerializedMetadata string         `json:"serialized_metadata"`
	TargetPlatform     string         `json:"target_platform"`
}

type specJSON struct {
	Key      string  `json:"key"`
	Value    *string `json:"value"`
	ValueHex *string `json:"value_hex"`
}

// ReadManifest reads a manifest file. Engine and blob paths in it are
// relative to the manifest's directory.
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ManifestError{File: path, Msg: "cannot read", Err: err}
	}
	m, err := ParseManifest(data, filepath.Dir(path))
	if err != nil {
		var me *ManifestError
		if errors.As(err, &me) {
			me.File = path
		}
		return nil, err
	}
	return m, nil
}

// maxManifestSize bounds what ParseManifest accepts.
const maxManifestSize = 64 << 20

// ParseManifest parses a manifest. Relative engine and blob paths are
// resolved against baseDir. Unknown fields are errors. Engine files are not
// opened.
func ParseManifest(data []byte, baseDir string) (*Manifest, error) {
	if len(data) > maxManifestSize {
		return nil, &ManifestError{Msg: fmt.Sprintf("manifest is larger than %d bytes", maxManifestSize)}
	}
	var raw manifestJSON
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, jsonError(data, err)
	}
	if _, err := d.Token(); err != io.EOF {
		line, col := lineCol(data, d.InputOffset())
		return nil, &ManifestError{Line: line, Col: col, Msg: "unexpected data after the JSON object"}
	}
	return raw.convert(baseDir)
}

func jsonError(data []byte, err error) error {
	me := &ManifestError{Msg: "invalid JSON", Err: err}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		me.Line, me.Col = lineCol(data, se.Offset)
	case errors.As(err, &te):
		me.Line, me.Col = lineCol(data, te.Offset)
		me.Field = te.Field
		me.Msg = "wrong JSON type"
	case errors.Is(err, io.EOF):
		me.Msg = "empty manifest"
		me.Err = nil
	}
	return me
}

func lineCol(data []byte, off int64) (int, int) {
	if off < 0 || off > int64(len(data)) {
		return 0, 0
	}
	pre := data[:off]
	line := bytes.Count(pre, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
	return line, col
}

func (raw *manifestJSON) convert(baseDir string) (*Manifest, error) {
	fail := func(field, format string, args ...any) error {
		return &ManifestError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	m := &Manifest{Program: &Program{}}
	if len(raw.Methods) == 0 {
		return nil, fail("methods", "at least one method is required")
	}
	specs, err := convertSpecs(raw.CompileSpecs, "compile_specs")
	if err != nil {
		return nil, err
	}
	m.Options.CompileSpecs = specs
	if len(raw.Budget) > 0 && string(raw.Budget) != "null" {
		b, err := parseBudgetJSON(raw.Budget)
		if err != nil {
			return nil, &ManifestError{Field: "weight_streaming_budget_per_engine", Msg: "bad budget", Err: err}
		}
		m.Options.WeightStreamingBudget = b
	}
	m.Options.TargetDevice = raw.TargetDevice
	m.Options.InlineDelegateData = raw.InlineDelegateData
	m.Options.SegmentAlignment = raw.SegmentAlignment

	for i, rm := range raw.Methods {
		mf := fmt.Sprintf("methods[%d]", i)
		if rm == nil {
			return nil, fail(mf, "method is null")
		}
		if rm.Name == "" {
			return nil, fail(mf+".name", "method name is required")
		}
		meth := &Method{Name: rm.Name}
		if meth.CompileSpecs, err = convertSpecs(rm.CompileSpecs, mf+".compile_specs"); err != nil {
			return nil, err
		}
		for j, t := range rm.Inputs {
			f := fmt.Sprintf("%s.inputs[%d]", mf, j)
			if t == nil || t.Name == "" {
				return nil, fail(f, "input name is required")
			}
			if t.DType == "" || t.Shape == nil {
				return nil, fail(f, "input %q needs \"dtype\" and \"shape\"", t.Name)
			}
			meth.Inputs = append(meth.Inputs, &Tensor{Name: t.Name, DType: DType(t.DType), Shape: t.Shape, MaxShape: t.MaxShape})
		}
		for j, t := range rm.Outputs {
			if t == nil || t.Name == "" {
				return nil, fail(fmt.Sprintf("%s.outputs[%d]", mf, j), "output name is required")
			}
			meth.Outputs = append(meth.Outputs, &Tensor{Name: t.Name, DType: DType(t.DType), Shape: t.Shape, MaxShape: t.MaxShape})
		}
		for j, e := range rm.Engines {
			call, err := e.convert(fmt.Sprintf("%s.engines[%d]", mf, j), baseDir)
			if err != nil {
				return nil, err
			}
			meth.Calls = append(meth.Calls, call)
		}
		m.Program.Methods = append(m.Program.Methods, meth)
	}
	return m, nil
}

func (e *engineJSON) convert(field, baseDir string) (*EngineCall, error) {
	fail := func(f, format string, args ...any) error {
		return &ManifestError{Field: field + f, Msg: fmt.Sprintf(format, args...)}
	}
	if e == nil {
		return nil, fail("", "engine is null")
	}
	c := &EngineCall{Name: e.Name, HardwareCompatible: e.HardwareCompatible,
		SerializedMetadata: e.SerializedMetadata, TargetPlatform: e.TargetPlatform}
	resolvePath := func(p string) string {
		if filepath.IsAbs(p) || baseDir == "" {
			return p
		}
		return filepath.Join(baseDir, p)
	}
	switch {
	case e.Engine != "" && e.Blob != "":
		return nil, fail("", "give \"engine\" or \"blob\", not both")
	case e.Engine != "":
		c.Engine = EngineFile(resolvePath(e.Engine))
		if c.Name == "" {
			c.Name = filepath.Base(e.Engine)
		}
	case e.Blob != "":
		c.Engine = BlobFile(resolvePath(e.Blob))
		if c.Name == "" {
			c.Name = filepath.Base(e.Blob)
		}
	default:
		return nil, fail("", "\"engine\" (a serialized TensorRT engine) or \"blob\" (an existing TensorRT delegate blob) is required")
	}
	if e.DeviceID != nil {
		if e.Blob != "" {
			return nil, fail(".device_id", "a blob carries its own device_id")
		}
		c.DeviceID = *e.DeviceID
	}
	conv := func(list []*bindingJSON, kind string) ([]*Binding, error) {
		var out []*Binding
		for k, b := range list {
			if b == nil {
				return nil, fail(fmt.Sprintf(".%s[%d]", kind, k), "binding is null")
			}
			out = append(out, &Binding{Name: b.Binding, Tensor: b.Tensor, DType: DType(b.DType), Shape: b.Shape, MaxShape: b.MaxShape})
		}
		return out, nil
	}
	var err error
	if c.Inputs, err = conv(e.Inputs, "inputs"); err != nil {
		return nil, err
	}
	if c.Outputs, err = conv(e.Outputs, "outputs"); err != nil {
		return nil, err
	}
	for k, a := range e.AliasedIO {
		if a == nil {
			return nil, fail(fmt.Sprintf(".aliased_io[%d]", k), "entry is null")
		}
		kind := a.Kind
		if kind == "" {
			kind = "kv_cache_update"
		}
		c.AliasedIO = append(c.AliasedIO, AliasedIO{Output: a.Output, Input: a.Input, Kind: kind})
	}
	return c, nil
}

func convertSpecs(list []*specJSON, field string) ([]*pte.CompileSpec, error) {
	var out []*pte.CompileSpec
	for i, s := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if s == nil || s.Key == "" {
			return nil, &ManifestError{Field: f, Msg: "compile spec needs a non-empty \"key\""}
		}
		var v []byte
		switch {
		case s.Value != nil && s.ValueHex != nil:
			return nil, &ManifestError{Field: f, Msg: "give \"value\" or \"value_hex\", not both"}
		case s.Value != nil:
			v = []byte(*s.Value)
		case s.ValueHex != nil:
			b, err := hex.DecodeString(*s.ValueHex)
			if err != nil {
				return nil, &ManifestError{Field: f + ".value_hex", Msg: "not hex", Err: err}
			}
			v = b
		default:
			return nil, &ManifestError{Field: f, Msg: "compile spec needs \"value\" or \"value_hex\""}
		}
		if v == nil {
			v = []byte{}
		}
		out = append(out, &pte.CompileSpec{Key: s.Key, Value: v})
	}
	return out, nil
}

// parseBudgetJSON reads a budget given as a JSON integer (bytes) or as a
// size string ("4GiB", "auto"). "auto" yields nil.
func parseBudgetJSON(raw json.RawMessage) (*int64, error) {
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	} else {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("want a byte count or a size string such as \"4GiB\" or \"auto\"")
		}
		if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
			return nil, fmt.Errorf("%s is not a whole number of bytes below 2^63", n)
		}
		s = n.String()
	}
	n, auto, err := compilespec.ParseSize(s)
	if err != nil {
		return nil, err
	}
	if auto {
		return nil, nil
	}
	return &n, nil
}
