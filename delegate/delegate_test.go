package delegate

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The golden example of trt-delegate.md §1.1, produced by the real writer.
func TestGoldenExample(t *testing.T) {
	m := &Metadata{IOBindings: []Binding{{Name: "x", IsInput: true}, {Name: "y"}}}
	engine := []byte("EEEEE")
	var buf bytes.Buffer
	n, err := Encode(&buf, m, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatal(err)
	}
	blob := buf.Bytes()
	const wantHeader = "54523031" + "20000000" + "e0000000" + "00010000" + "0500000000000000" + "0100000000000000"
	if got := hex.EncodeToString(blob[:32]); got != wantHeader {
		t.Errorf("header = %s, want %s", got, wantHeader)
	}
	if n != 261 || len(blob) != 261 {
		t.Errorf("size = %d (returned %d), want 261", len(blob), n)
	}
	const wantMeta = `{"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true},{"name":"y","dtype":"","shape":[],"is_input":false}],"aliased_io":[],"hardware_compatible":false,"device_id":0,"serialized_metadata":"","target_platform":""}`
	if got := string(blob[32 : 32+224]); got != wantMeta {
		t.Errorf("metadata = %s\nwant %s", got, wantMeta)
	}
	if !bytes.Equal(blob[256:], engine) {
		t.Errorf("engine bytes = %q", blob[256:])
	}
}

func TestPythonEscaping(t *testing.T) {
	for _, c := range []struct{ in, py, safe string }{
		{"plain", `"plain"`, `"plain"`},
		{`q"b\s/`, `"q\"b\\s/"`, `"q\"b\\s/"`},
		{"\n\r\t\b\f", `"\n\r\t\b\f"`, ``},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`, ``},
		{"del\x7f", `"del\u007f"`, "\"del\x7f\""},
		{"<>&'", `"<>&'"`, `"<>&'"`},
		{"é", `"\u00e9"`, "\"é\""},
		{"\u2028\uffff", `"\u2028\uffff"`, "\"\u2028\uffff\""},
		{"😀", `"\ud83d\ude00"`, "\"😀\""},
		{"\U0010ffff", `"\udbff\udfff"`, "\"\U0010ffff\""},
	} {
		if got := string(appendString(nil, c.in, false)); got != c.py {
			t.Errorf("python escaping of %q = %s, want %s", c.in, got, c.py)
		}
		if c.safe != "" {
			if got := string(appendString(nil, c.in, true)); got != c.safe {
				t.Errorf("safe escaping of %q = %s, want %s", c.in, got, c.safe)
			}
		}
	}
}

func TestSafeModeRefusals(t *testing.T) {
	base := func() *Metadata {
		return &Metadata{
			IOBindings: []Binding{{Name: "x", IsInput: true}, {Name: "y"}},
			AliasedIO:  []AliasedIO{{Output: "y", Input: "x", Kind: KindUser}},
		}
	}
	for _, c := range []struct {
		name  string
		edit  func(m *Metadata)
		field string
	}{
		{"empty name", func(m *Metadata) { m.IOBindings[1].Name = "" }, "io_bindings[1].name"},
		{"tab in name", func(m *Metadata) { m.IOBindings[0].Name = "a\tb" }, "io_bindings[0].name"},
		{"empty alias output", func(m *Metadata) { m.AliasedIO[0].Output = "" }, "aliased_io[0].output"},
		{"empty alias input", func(m *Metadata) { m.AliasedIO[0].Input = "" }, "aliased_io[0].input"},
		{"empty kind", func(m *Metadata) { m.AliasedIO[0].Kind = "" }, "aliased_io[0].kind"},
		{"duplicate name", func(m *Metadata) { m.IOBindings[1].Name = "x" }, "io_bindings[1].name"},
		{"device id over int32", func(m *Metadata) { m.DeviceID = 1 << 31 }, "device_id"},
		{"device id under int32", func(m *Metadata) { m.DeviceID = -1<<31 - 1 }, "device_id"},
		{"duplicate aliased output", func(m *Metadata) { m.AliasedIO = append(m.AliasedIO, m.AliasedIO[0]) }, "aliased_io[1].output"},
		{"invalid UTF-8", func(m *Metadata) { m.TargetPlatform = "\xff" }, "target_platform"},
		// Read as meant by the deployed reader, refused by init.
		{"negative device id", func(m *Metadata) { m.DeviceID = -5 }, "device_id"},
		{"unknown kind", func(m *Metadata) { m.AliasedIO[0].Kind = "bogus" }, "aliased_io[0].kind"},
		{"kind ending in a quoted key", func(m *Metadata) { m.AliasedIO[0].Kind = `x"device_id` }, "aliased_io[0].kind"},
		{"alias output not a binding", func(m *Metadata) { m.AliasedIO[0].Output = "z" }, "aliased_io[0].output"},
		{"alias output is an input", func(m *Metadata) { m.AliasedIO[0].Output = "x" }, "aliased_io[0].output"},
		{"alias input is an output", func(m *Metadata) { m.AliasedIO[0].Input = "y" }, "aliased_io[0].input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := base()
			c.edit(m)
			_, err := Encode(io.Discard, m, strings.NewReader("abcd"), 4)
			var me *MetadataError
			if !errors.As(err, &me) || me.Field != c.field {
				t.Fatalf("error = %v, want a *MetadataError for %s", err, c.field)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("message does not name the field: %v", err)
			}
		})
	}
	// What safe mode does accept: names the C++ reader searches for, when
	// they are bindings (the search starts after the io_bindings array),
	// quotes and backslashes, DEL and non-ASCII.
	m := &Metadata{
		IOBindings: []Binding{{Name: "device_id", IsInput: true}, {Name: "hardware_compatible"}, {Name: `a"b\c` + "\x7fé", IsInput: true}},
		AliasedIO:  []AliasedIO{{Output: "hardware_compatible", Input: `a"b\c` + "\x7fé", Kind: KindUser}},
		DeviceID:   1<<31 - 1, HardwareCompatible: true,
	}
	var buf bytes.Buffer
	if _, err := Encode(&buf, m, strings.NewReader("ENG"), 3); err != nil {
		t.Fatal(err)
	}
	full := func() *Metadata { // Decode fills the defaults
		c := *m
		for i := range m.IOBindings {
			c.IOBindings[i].Shape = []int64{}
		}
		return &c
	}()
	checkBothReadersRead(t, buf.Bytes(), full, []byte("ENG"))
	if buf.Bytes()[3] != '2' {
		t.Errorf("magic %q, want TR02 for aliased I/O", buf.Bytes()[:4])
	}
}

// TestSafeModeScalarsFirst: an aliased string the C++ key search would take
// for "hardware_compatible" or "device_id" is written with those two keys
// before aliased_io, so both readers read the blob as meant; other metadata
// keeps upstream's order, byte for byte.
func TestSafeModeScalarsFirst(t *testing.T) {
	up := &EncodeOptions{UpstreamCompatible: true}
	for _, c := range []struct {
		name  string
		alias AliasedIO
		moved bool
	}{
		{"output named device_id", AliasedIO{Output: "device_id", Input: "x", Kind: KindUser}, true},
		{"input named hardware_compatible", AliasedIO{Output: "y", Input: "hardware_compatible", Kind: KindUser}, true},
		{"key as a prefix only", AliasedIO{Output: "y", Input: "device_id_", Kind: KindUser}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Metadata{
				IOBindings:         []Binding{{Name: "x", IsInput: true, Shape: []int64{}}, {Name: "y", Shape: []int64{}}, {Name: c.alias.Output, Shape: []int64{}}},
				AliasedIO:          []AliasedIO{c.alias},
				HardwareCompatible: true, DeviceID: 3,
			}
			if c.alias.Output == "y" {
				m.IOBindings = m.IOBindings[:2]
			}
			if c.alias.Input != "x" {
				m.IOBindings = append(m.IOBindings, Binding{Name: c.alias.Input, IsInput: true, Shape: []int64{}})
			}
			safe := encodeBytes(t, nil, m, []byte("ENGINE"))
			upstream := encodeBytes(t, up, m, []byte("ENGINE"))
			checkBothReadersRead(t, safe, m, []byte("ENGINE"))
			rep, err := Check(bytes.NewReader(safe), int64(len(safe)))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Err != nil || len(rep.Hazards) != 0 {
				t.Fatalf("Check of the safe blob: %v, hazards %v", rep.Err, rep.Hazards)
			}
			md := string(safe[32 : 32+binary.LittleEndian.Uint32(safe[offMetadataSize:])])
			scalarsFirst := strings.Index(md, `"device_id"`) < strings.Index(md, `"aliased_io"`)
			if scalarsFirst != c.moved || bytes.Equal(safe, upstream) == c.moved {
				t.Errorf("scalars before aliased_io = %v, same as upstream = %v; want moved = %v\n%s", scalarsFirst, bytes.Equal(safe, upstream), c.moved, md)
			}
			if c.moved {
				if v, _ := ReadDeployed(bytes.NewReader(upstream), int64(len(upstream))); v.OK {
					t.Errorf("the upstream-order blob was expected to be rejected by the C++ reader")
				}
				if err := CheckNames(m); err == nil {
					t.Errorf("CheckNames accepts names that break a blob in upstream's order")
				}
			}
		})
	}
}

func TestUpstreamModeWritesWhatSafeModeRefuses(t *testing.T) {
	m := &Metadata{IOBindings: []Binding{{Name: "", IsInput: true}, {Name: "a\nb"}}, DeviceID: 1 << 40}
	up := &EncodeOptions{UpstreamCompatible: true}
	var buf bytes.Buffer
	if _, err := up.Encode(&buf, m, nil, 0); err != nil {
		t.Fatal(err)
	}
	b, err := Decode(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if b.Metadata.IOBindings[1].Name != "a\nb" || b.Metadata.DeviceID != 1<<40 {
		t.Errorf("decoded %+v", b.Metadata)
	}
	if _, err := Encode(io.Discard, m, nil, 0); err == nil {
		t.Error("safe mode accepted it")
	}
}

func TestEncodeEngineErrors(t *testing.T) {
	m := &Metadata{IOBindings: []Binding{{Name: "x", IsInput: true}}}
	engineErr := func(what string, err error, sentinel error) {
		t.Helper()
		var ee *EngineError
		if !errors.As(err, &ee) || !strings.HasPrefix(err.Error(), "trt engine: ") {
			t.Errorf("%s: err = %v, want an *EngineError", what, err)
		}
		if sentinel != nil && !errors.Is(err, sentinel) {
			t.Errorf("%s: err = %v, want it to wrap %v", what, err, sentinel)
		}
	}
	var buf bytes.Buffer
	n, err := Encode(&buf, m, strings.NewReader("abc"), 10)
	engineErr("short engine", err, io.ErrUnexpectedEOF)
	if n != int64(buf.Len()) {
		t.Errorf("short engine: returned %d, wrote %d", n, buf.Len())
	}
	_, err = Encode(io.Discard, m, strings.NewReader("abc"), -1)
	engineErr("negative engine size", err, nil)
	_, err = NewBlobReader(m, strings.NewReader("abc"), -1)
	engineErr("NewBlobReader with a negative size", err, nil)
	buf.Reset()
	_, err = Encode(&buf, m, nil, 4)
	engineErr("nil engine", err, nil)
	if buf.Len() != 0 {
		t.Errorf("nil engine: %d bytes written before the refusal", buf.Len())
	}
	_, err = NewBlobReader(m, nil, 4)
	engineErr("NewBlobReader with a nil engine", err, nil)
	boom := errors.New("boom")
	_, err = Encode(io.Discard, m, readerAtFunc(func([]byte, int64) (int, error) { return 0, boom }), 4)
	if !errors.Is(err, boom) {
		t.Errorf("engine read error lost: %v", err)
	}
	if _, err := Encode(io.Discard, nil, nil, 0); err == nil {
		t.Error("nil metadata accepted")
	}
	sr, err := NewBlobReader(m, strings.NewReader("abc"), 10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(sr)
	engineErr("blob reader over a short engine", err, io.ErrUnexpectedEOF)
	if _, err := Encode(failWriter{}, m, strings.NewReader("abc"), 3); err == nil {
		t.Error("writer error lost")
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestBlobReaderAt(t *testing.T) {
	m := &Metadata{IOBindings: []Binding{{Name: "in", IsInput: true}, {Name: "out"}}, TargetPlatform: "linux_x86_64"}
	engine := bytes.Repeat([]byte("0123456789abcdef!"), 100)
	var want bytes.Buffer
	if _, err := Encode(&want, m, bytes.NewReader(engine), int64(len(engine))); err != nil {
		t.Fatal(err)
	}
	sr, err := NewBlobReader(m, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatal(err)
	}
	if err := iotest.TestReader(io.NewSectionReader(sr, 0, sr.Size()), want.Bytes()); err != nil {
		t.Fatal(err)
	}
	// Reads straddling the metadata/engine boundary and the end.
	b := make([]byte, 64)
	for _, off := range []int64{0, 200, 250, sr.Size() - 10, sr.Size()} {
		n, err := sr.ReadAt(b, off)
		end := min(off+64, sr.Size())
		if n != int(end-off) || !bytes.Equal(b[:n], want.Bytes()[off:end]) {
			t.Errorf("ReadAt(%d) = %d bytes, want %d", off, n, end-off)
		}
		if (end-off < 64) != (err == io.EOF) {
			t.Errorf("ReadAt(%d) err = %v", off, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good := func() []byte {
		var buf bytes.Buffer
		m := &Metadata{IOBindings: []Binding{{Name: "x", IsInput: true}}}
		if _, err := Encode(&buf, m, strings.NewReader("ENGINE"), 6); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	withMeta := func(js string) []byte {
		b := good()[:32]
		b = append(b, js...)
		for len(b)%16 != 0 {
			b = append(b, 0)
		}
		eo := len(b)
		b = append(b, "ENGINE"...)
		putLE32(b[8:], uint32(len(js)))
		putLE32(b[12:], uint32(eo))
		return b
	}
	for _, c := range []struct {
		name  string
		blob  []byte
		field string
		off   int64
	}{
		{"short", good()[:20], "header", 20},
		{"magic", patch(good(), 0, "TR1\x00"), "magic", 0},
		{"metadata offset", patch(good(), 4, "\x10\x00\x00\x00"), "metadata_offset", 4},
		{"unaligned engine", patch(good(), 12, "\x41\x00\x00\x00"), "engine_offset", 12},
		{"metadata past end", patch(good(), 8, "\xff\xff\x00\x00"), "metadata_size", 8},
		{"engine past end", patch(good(), 16, "\x07"), "engine_size", 16},
		{"engine size wraps", patch(good(), 16, "\xf0\xff\xff\xff\xff\xff\xff\xff"), "engine_size", 16},
		{"bad UTF-8", withMeta("{\"io_bindings\":[{\"name\":\"\xc3\"}]}"), "metadata", 32 + 25},
		{"syntax", withMeta(`{"io_bindings":[}`), "metadata", 32 + 16},
		{"BOM", withMeta("\ufeff{}"), "metadata", 32},
		{"NaN", withMeta(`{"device_id":NaN}`), "metadata", 32 + 13},
		{"lone surrogate", withMeta(`{"target_platform":"\ud800"}`), "metadata", 32 + 20},
		{"not object", withMeta(`[]`), "metadata", 32},
		{"io_bindings object", withMeta(`{"io_bindings":{}}`), "metadata.io_bindings", 32 + 15},
		{"shape float", withMeta(`{"io_bindings":[{"name":"x","shape":[1.0]}]}`), "metadata.io_bindings[0].shape[0]", 32 + 37},
		{"device id huge", withMeta(`{"device_id":9223372036854775808}`), "metadata.device_id", 32 + 13},
		{"aliased no output", withMeta(`{"aliased_io":[{"input":"x"}]}`), "metadata.aliased_io[0]", 32 + 15},
		{"kind null", withMeta(`{"aliased_io":[{"output":"o","input":"x","kind":null}]}`), "metadata.aliased_io[0].kind", 32 + 48},
		{"duplicate aliased output", withMeta(`{"aliased_io":[{"output":"o","input":"x"},{"output":"o","input":"y"}]}`), "metadata.aliased_io[1].output", 32 + 52},
		{"deep nesting", withMeta(`{"x":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`), "metadata", 32 + 5 + maxJSONDepth - 1}, // the object is level 1
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(bytes.NewReader(c.blob), int64(len(c.blob)))
			var be *BlobError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want *BlobError", err)
			}
			if be.Field != c.field || be.Off != c.off {
				t.Errorf("error at %s byte %d, want %s byte %d: %v", be.Field, be.Off, c.field, c.off, err)
			}
		})
	}
	// Python's defaults for absent keys; last duplicate key wins.
	dflt := withMeta(`{"io_bindings":[{"name":"a","name":"b"}],"aliased_io":[{"output":"o","input":"b"}],"device_id":1,"device_id":2}`)
	b, err := Decode(bytes.NewReader(dflt), int64(len(dflt)))
	if err != nil {
		t.Fatal(err)
	}
	want := Metadata{IOBindings: []Binding{{Name: "b", Shape: []int64{}, IsInput: true}}, AliasedIO: []AliasedIO{{"o", "b", KindKVCacheUpdate}}, DeviceID: 2}
	if got := b.Metadata; got.IOBindings[0].Name != "b" || !got.IOBindings[0].IsInput || got.AliasedIO[0] != want.AliasedIO[0] || got.DeviceID != 2 || got.HardwareCompatible {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Encode(&buf, &Metadata{IOBindings: []Binding{{Name: "x", IsInput: true}}}, strings.NewReader("E"), 1); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	r := iotest.ErrReader(boom)
	ra := readerAtFunc(func(p []byte, off int64) (int, error) { return r.Read(p) })
	if _, err := Decode(ra, int64(buf.Len())); !errors.Is(err, boom) {
		t.Errorf("Decode err = %v", err)
	}
	if _, err := ReadDeployed(ra, int64(buf.Len())); !errors.Is(err, boom) {
		t.Errorf("ReadDeployed err = %v", err)
	}
	if _, err := Check(ra, int64(buf.Len())); !errors.Is(err, boom) {
		t.Errorf("Check err = %v", err)
	}
	// A reader shorter than the size claimed.
	short := bytes.NewReader(buf.Bytes()[:40])
	if _, err := Decode(short, int64(buf.Len())); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short reader: err = %v", err)
	}
}

type readerAtFunc func(p []byte, off int64) (int, error)

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }

func TestDeployedScanner(t *testing.T) {
	for _, c := range []struct {
		name, meta string
		ok         bool
		in, out    []string
		hw         bool
		dev        int32
		aliases    int
	}{
		{"commas tolerated", `{"io_bindings":[,{"name":"a",,"is_input":true},]}`, true, []string{"a"}, nil, false, 0, 0},
		{"key without colon", `{"io_bindings":[{"name" "a"}]}`, false, nil, nil, false, 0, 0},
		{"unterminated", `{"io_bindings":[{"name":"a"`, false, nil, nil, false, 0, 0},
		{"trailing backslash", `{"io_bindings":[{"name":"a\`, false, nil, nil, false, 0, 0},
		{"nested skip", `{"io_bindings":[{"x":{"y":["}",{"z":1}]},"name":"a","is_input":false}]}`, true, nil, []string{"a"}, false, 0, 0},
		{"is_input trueX in binding", `{"io_bindings":[{"name":"a","is_input":trueX}]}`, false, nil, nil, false, 0, 0},
		{"hw prefix", `{"io_bindings":[],"hardware_compatible": falsey}`, true, nil, nil, false, 0, 0},
		{"hw missing colon", `{"io_bindings":[],"hardware_compatible"}`, false, nil, nil, false, 0, 0},
		{"device wraps negative", `{"io_bindings":[],"device_id":-4294967297}`, true, nil, nil, false, -1, 0},
		{"escaped key text is no match", `{"io_bindings":[],"note":"\"device_id\":7","device_id":3}`, true, nil, nil, false, 3, 0},
		{"device in string value", `{"io_bindings":[],"note":"device_id","other":7,"device_id":3}`, true, nil, nil, false, 7, 0},
		{"aliased drops empty", `{"io_bindings":[],"aliased_io":[{"output":"","input":"x"},{"output":"o","input":"x","kind":""}]}`, true, nil, nil, false, 0, 1},
		{"aliased no bracket", `{"io_bindings":[],"aliased_io":5}`, false, nil, nil, false, 0, 0},
		{"aliased before bindings ignored", `{"aliased_io":[{"output":"o","input":"x"}],"io_bindings":[]}`, true, nil, nil, false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v DeployedView
			reason := scanMetadata([]byte(c.meta), &v)
			if (reason == "") != c.ok {
				t.Fatalf("ok = %v (reason %q), want %v", reason == "", reason, c.ok)
			}
			if !c.ok {
				return
			}
			if !equalStringSlices(v.Inputs, nz(c.in)) || !equalStringSlices(v.Outputs, nz(c.out)) ||
				v.HardwareCompatible != c.hw || v.DeviceID != c.dev || len(v.AliasedIO) != c.aliases {
				t.Errorf("got in %q out %q hw %v dev %d aliases %v", v.Inputs, v.Outputs, v.HardwareCompatible, v.DeviceID, v.AliasedIO)
			}
		})
	}
}

func nz(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestHazardMessages(t *testing.T) {
	blob := func(meta string) []byte {
		b := make([]byte, 32, 32+len(meta)+16)
		copy(b, "TR01")
		b = append(b, meta...)
		for len(b)%16 != 0 {
			b = append(b, ' ')
		}
		putLE32(b[4:], 32)
		putLE32(b[8:], uint32(len(meta)))
		putLE32(b[12:], uint32(len(b)))
		return b
	}
	for _, c := range []struct {
		meta string
		kind HazardKind
		text string
	}{
		{`{"io_bindings":[{"name":"x"}]}`, HazardInputs, `"x" is read as an output`},
		{`{"io_bindings":[{"name":"x"}]}`, HazardOutputs, `outputs differ: the metadata says [], the deployed reader sees ["x"]`},
		{`{"io_bindings":[{"name":"","is_input":true},{"name":"y","is_input":true}]}`, HazardInputs, `empty name is dropped`},
		{`{"io_bindings":[{"name":"caf\u00e9","is_input":true}]}`, HazardInputs, `input 0 "café" is read as "cafu00e9"`},
		{`{"io_bindings":[{"name":"o","is_input":false}],"aliased_io":[{"output":"o","input":"device_id","kind":"user"}],"device_id":1}`, HazardDeployedRejects, `InvalidProgram`},
		{`{"io_bindings":[],"device_id":-2}`, HazardNegativeDeviceID, `-2`},
		{`{"io_bindings":[{"name":"x","is_input":true}]} junk`, HazardDeployedAccepts, `extra data`},
	} {
		b := blob(c.meta)
		rep, err := Check(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range rep.Hazards {
			if h.Kind == c.kind && strings.Contains(h.String(), c.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s hazard containing %q in %v", c.meta, c.kind, c.text, rep.Hazards)
		}
	}
}

func patch(b []byte, off int, s string) []byte {
	copy(b[off:], s)
	return b
}

func putLE32(b []byte, v uint32) { copy(b, binary.LittleEndian.AppendUint32(nil, v)) }

// handBlob lays out a blob by hand: header, metadata at 32, zero padding to
// a 16-byte boundary, then the engine and any trailing bytes.
func handBlob(magic, meta string, engine, trailing []byte) []byte {
	b := make([]byte, 32, 64+len(meta)+len(engine)+len(trailing))
	copy(b, magic)
	b = append(b, meta...)
	for len(b)%16 != 0 {
		b = append(b, 0)
	}
	putLE32(b[offMetadataOffset:], 32)
	putLE32(b[offMetadataSize:], uint32(len(meta)))
	putLE32(b[offEngineOffset:], uint32(len(b)))
	copy(b[offEngineSize:], binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(len(engine))), 0))
	b = append(b, engine...)
	return append(b, trailing...)
}

// TestHazardKinds: each documented hazard is reported, with what it is
// about, and only where it applies.
func TestHazardKinds(t *testing.T) {
	const io = `{"io_bindings":[{"name":"x","is_input":true},{"name":"y","is_input":false}]`
	eng := []byte("ENG!")
	wrapped := handBlob("TR01", io+`}`, eng, nil)
	copy(wrapped[offEngineSize:], binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0xfffffff0), 0xffffffff)) // 2^64-16
	for _, c := range []struct {
		name string
		blob []byte
		kind HazardKind
		text string
	}{
		{"engine size wraps", wrapped, HazardEngineSizeWraps, "18446744073709551600"},
		{"TR02 without aliased_io", handBlob("TR02", io+`}`, eng, nil), HazardMagic, "magic TR02"},
		{"TR01 with aliased_io", handBlob("TR01", io+`,"aliased_io":[{"output":"y","input":"x"}]}`, eng, nil), HazardMagic, "magic TR01"},
		{"trailing bytes", handBlob("TR01", io+`}`, eng, []byte("0123456")), HazardTrailingBytes, "7 bytes"},
		{"no bindings", handBlob("TR01", `{"io_bindings":[]}`, eng, nil), HazardNoBindings, "infers them"},
		{"duplicate name", handBlob("TR01", `{"io_bindings":[{"name":"x","is_input":true},{"name":"x","is_input":false}]}`, eng, nil), HazardDuplicateName, `"x" is used by io_bindings [0], [1]`},
		{"type confused", handBlob("TR01", io+`,"device_id":"1"}`, eng, nil), HazardTypeConfused, "metadata.device_id: want an integer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Check(bytes.NewReader(c.blob), int64(len(c.blob)))
			if err != nil {
				t.Fatal(err)
			}
			var found []Hazard
			for _, h := range rep.Hazards {
				if h.Kind == c.kind {
					found = append(found, h)
				}
			}
			if len(found) != 1 || !strings.Contains(found[0].Msg, c.text) {
				t.Fatalf("want one %s hazard mentioning %q, got %v", c.kind, c.text, rep.Hazards)
			}
			if c.kind == HazardEngineSizeWraps && (!rep.Deployed.EngineSizeWraps || !rep.Deployed.OK) {
				t.Errorf("deployed view %+v: want OK with EngineSizeWraps", rep.Deployed)
			}
		})
	}
	// None of them on a blob the upstream writer would write.
	good := handBlob("TR01", io+`}`, eng, nil)
	rep, err := Check(bytes.NewReader(good), int64(len(good)))
	if err != nil || rep.Err != nil || len(rep.Hazards) != 0 || rep.Deployed.EngineSizeWraps {
		t.Fatalf("clean blob: %v, %v, hazards %v", err, rep.Err, rep.Hazards)
	}
	// An engine size that ends exactly at 2^64 wraps to 0 and is caught by
	// no check in C++ either; one that stays below does not wrap.
	edge := handBlob("TR01", io+`}`, eng, nil)
	eo := uint64(binary.LittleEndian.Uint32(edge[offEngineOffset:]))
	size := -eo // 2^64 - engine_offset
	copy(edge[offEngineSize:], binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(size)), uint32(size>>32)))
	v, err := ReadDeployed(bytes.NewReader(edge), int64(len(edge)))
	if err != nil || !v.OK || !v.EngineSizeWraps {
		t.Errorf("engine ending at 2^64: %+v, %v", v, err)
	}
	size--
	copy(edge[offEngineSize:], binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(size)), uint32(size>>32)))
	if v, err := ReadDeployed(bytes.NewReader(edge), int64(len(edge))); err != nil || v.OK || v.EngineSizeWraps {
		t.Errorf("engine ending at 2^64-1: %+v, %v", v, err)
	}
}

// TestDeployedAcceptsWording: the hazard says precisely who rejects.
func TestDeployedAcceptsWording(t *testing.T) {
	for _, c := range []struct{ meta, text string }{
		// Not JSON: Python rejects too.
		{`{"io_bindings":[{"name":"x","is_input":true}]} junk`, "upstream's Python reader and ptekit reject it"},
		// A float device_id: Python and the C++ reader accept it, the
		// strict reading does not.
		{`{"io_bindings":[{"name":"x","is_input":true}],"device_id":1.5}`, "upstream's Python reader accepts it with other types"},
	} {
		b := handBlob("TR01", c.meta, []byte("E"), nil)
		rep, err := Check(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, h := range rep.Hazards {
			if h.Kind == HazardDeployedAccepts {
				got = h.Msg
			}
		}
		if !strings.Contains(got, c.text) {
			t.Errorf("%s: deployed-accepts hazard %q, want it to say %q", c.meta, got, c.text)
		}
	}
}

// TestHeaderCheckOrder: when several header checks fail, Decode reports the
// one upstream's Python reader checks first and the deployed view the one
// the C++ reader checks first.
func TestHeaderCheckOrder(t *testing.T) {
	base := func() []byte { return handBlob("TR01", `{"io_bindings":[]}`, []byte("ENGINE"), nil) }
	for _, c := range []struct {
		name    string
		edit    func(b []byte)
		field   string // Decode's (Python order)
		cppWord string // in the deployed Reason (C++ order)
	}{
		{"unaligned engine and metadata in header", func(b []byte) {
			putLE32(b[offEngineOffset:], binary.LittleEndian.Uint32(b[offEngineOffset:])+4)
			putLE32(b[offMetadataOffset:], 16)
		}, "engine_offset", "inside the header"},
		{"metadata past end and engine past end", func(b []byte) {
			putLE32(b[offMetadataSize:], 1<<20)
			b[offEngineSize+7] = 0x10
		}, "metadata_size", "metadata ends"},
		{"engine past end and metadata overlapping", func(b []byte) {
			putLE32(b[offMetadataSize:], binary.LittleEndian.Uint32(b[offEngineOffset:])-32+2) // ends 2 bytes into the engine
			b[offEngineSize+4] = 1
		}, "engine_size", "engine ends"},
		{"bad magic and unaligned engine", func(b []byte) {
			copy(b, "TR03")
			putLE32(b[offEngineOffset:], 33)
		}, "magic", "unknown magic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := base()
			c.edit(b)
			_, err := Decode(bytes.NewReader(b), int64(len(b)))
			var be *BlobError
			if !errors.As(err, &be) || be.Field != c.field {
				t.Errorf("Decode: %v, want the %s check first", err, c.field)
			}
			v, err := ReadDeployed(bytes.NewReader(b), int64(len(b)))
			if err != nil || v.OK || !strings.Contains(v.Reason, c.cppWord) {
				t.Errorf("ReadDeployed: %+v, %v; want a reason with %q", v, err, c.cppWord)
			}
		})
	}
}
