package delegate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// seedBlobs are the committed seeds of FuzzDecode and FuzzReadDeployed:
// blobs written by this package plus hand-made metadata that exercises the
// scanners' corners.
func seedBlobs(t testing.TB) [][]byte {
	var out [][]byte
	up := &EncodeOptions{UpstreamCompatible: true}
	for _, m := range []*Metadata{
		{IOBindings: []Binding{{Name: "x", IsInput: true}, {Name: "y"}}},
		{IOBindings: []Binding{{Name: "k", DType: "float16", Shape: []int64{1, -1, 8}, IsInput: true}, {Name: "k_out"}},
			AliasedIO: []AliasedIO{{Output: "k_out", Input: "k", Kind: KindKVCacheUpdate}}, HardwareCompatible: true, DeviceID: 3,
			SerializedMetadata: "c2V0dGluZ3M=", TargetPlatform: "linux_x86_64"},
		{IOBindings: []Binding{{Name: "caf\u00e9 \"q\" \\ \n", IsInput: true}}, DeviceID: -1},
		{IOBindings: []Binding{}, AliasedIO: []AliasedIO{{Output: "device_id", Input: "x", Kind: "user"}}},
	} {
		var buf bytes.Buffer
		if _, err := up.Encode(&buf, m, bytes.NewReader([]byte("ENGINE")), 6); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	for _, meta := range []string{
		`{"io_bindings":[{"name":"x"}],"future":{"device_id":9},"device_id":4,"hardware_compatible":trueX}`,
		"\r\n{\t\"io_bindings\" : [ {\"name\":\"a\\/b\",\"is_input\":false,\"extra\":{\"a\":[\"]\"]}} ] }garbage",
		`{"device_id":3,"io_bindings":[{"name":5},5],"aliased_io":[{"output":""}]}`,
		`{"io_bindings":[{"name":"\ud83d\ude00","shape":[1e2,-0,9223372036854775808]}],"device_id":4294967297}`,
	} {
		b := make([]byte, 32, 64+len(meta))
		copy(b, "TR02")
		b = append(b, meta...)
		for len(b)%16 != 0 {
			b = append(b, 0)
		}
		putLE32(b[4:], 32)
		putLE32(b[8:], uint32(len(meta)))
		putLE32(b[12:], uint32(len(b)))
		b = append(b, "ENG!"...)
		copy(b[16:], binary.LittleEndian.AppendUint32(nil, 4))
		out = append(out, b)
	}
	return out
}

// addVectorSeeds adds the shared conformance blobs, when present, as
// uncommitted seeds.
func addVectorSeeds(f *testing.F) {
	testkit.AddSharedSeeds(f, 0, "vectors/trt-blob-read/*.blob", "vectors/trt-blob-write/*.blob")
}

// TestFuzzSeeds keeps the committed seed files in step with seedBlobs and
// encodeSeeds; -update rewrites them.
func TestFuzzSeeds(t *testing.T) {
	for _, target := range []string{"FuzzDecode", "FuzzReadDeployed", "FuzzEncodeRoundTrip"} {
		dir := filepath.Join("testdata", "fuzz", target)
		seeds := seedBlobs(t)
		if target == "FuzzEncodeRoundTrip" {
			seeds = encodeSeeds()
		}
		for i, b := range seeds {
			testkit.Golden(t, filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), testkit.FuzzCorpusFile(b))
		}
	}
}

func FuzzDecode(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, blob []byte) {
		r := bytes.NewReader(blob)
		b, err := Decode(r, int64(len(blob)))
		rep, cerr := Check(r, int64(len(blob)))
		if cerr != nil {
			t.Fatalf("Check: %v", cerr)
		}
		if (err == nil) != (rep.Err == nil) {
			t.Fatalf("Decode err %v, Check err %v", err, rep.Err)
		}
		// The strict reading is the Python reading minus its refusals.
		pb, perr := DecodePython(r, int64(len(blob)))
		if (perr == nil) != (rep.PythonErr == nil) {
			t.Fatalf("DecodePython err %v, Check err %v", perr, rep.PythonErr)
		}
		if strictOK := perr == nil && len(pb.Metadata.Refused) == 0; strictOK != (err == nil) {
			t.Fatalf("Decode err %v, but DecodePython err %v with refusals %v", err, perr, pb)
		}
		if perr == nil && err != nil && !hasHazard(rep.Hazards, HazardTypeConfused) {
			t.Fatalf("Python accepts what the strict reading refuses, but no hazard says so: %v", rep.Hazards)
		}
		if err != nil {
			if _, ok := err.(*BlobError); !ok {
				t.Fatalf("error is %T, want *BlobError: %v", err, err)
			}
			return
		}
		end := int64(b.Header.EngineOffset) + int64(b.Header.EngineSize)
		if b.Header.MetadataOffset < HeaderSize || end > int64(len(blob)) || b.Engine().Size() != int64(b.Header.EngineSize) {
			t.Fatalf("accepted header out of bounds: %+v", b.Header)
		}
		// Whatever Decode accepts, the upstream-mode writer can write back,
		// and it decodes to the same metadata.
		var buf bytes.Buffer
		if _, err := (&EncodeOptions{UpstreamCompatible: true}).Encode(&buf, &b.Metadata, b.Engine(), b.Engine().Size()); err != nil {
			t.Fatalf("re-encoding decoded metadata: %v", err)
		}
		b2, err := Decode(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("decoding re-encoded blob: %v", err)
		}
		if !reflect.DeepEqual(b.Metadata, b2.Metadata) {
			t.Fatalf("round trip changed the metadata:\n%+v\n%+v", b.Metadata, b2.Metadata)
		}
	})
}

func FuzzReadDeployed(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, blob []byte) {
		v, err := ReadDeployed(bytes.NewReader(blob), int64(len(blob)))
		if err != nil {
			t.Fatalf("ReadDeployed on an in-memory blob: %v", err)
		}
		if v.OK {
			if v.Reason != "" || v.MetadataOffset < HeaderSize || uint64(v.MetadataOffset)+uint64(v.MetadataSize) > uint64(len(blob)) {
				t.Fatalf("OK view out of bounds: %+v", v)
			}
			for _, a := range v.AliasedIO {
				if a.Output == "" || a.Input == "" || a.Kind == "" {
					t.Fatalf("empty aliased field kept: %+v", a)
				}
			}
			if slices.Contains(v.Inputs, "") || slices.Contains(v.Outputs, "") {
				t.Fatal("empty binding name kept")
			}
		} else if v.Reason == "" {
			t.Fatal("rejection without a reason")
		}
		rep, err := Check(bytes.NewReader(blob), int64(len(blob)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rep.Deployed, v) {
			t.Fatalf("Check.Deployed %+v differs from ReadDeployed %+v", rep.Deployed, v)
		}
		for _, h := range rep.Hazards {
			if h.Msg == "" || h.Kind.String() == "" {
				t.Fatalf("empty hazard %+v", h)
			}
		}
	})
}

// fuzzWords are strings the metadata generator draws from: names that
// look like the keys the C++ scanner searches for, escapes, non-ASCII.
var fuzzWords = []string{"x", "y", "device_id", "hardware_compatible", "aliased_io", "io_bindings", `x"device_id`,
	"caf\u00e9", "\U0001f600", "a\nb", "\x7f", `q"\`, "", KindKVCacheUpdate, KindUser, "\u2028"}

// fuzzMetadata builds metadata from fuzz input: a flag byte, counts of
// bindings and aliases (0 to 5 and 0 to 3, so names repeat), then a string
// per field, each a word (high bit set) or up to 15 raw bytes.
type fuzzMetadata struct {
	data []byte
}

func (g *fuzzMetadata) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	c := g.data[0]
	g.data = g.data[1:]
	return c
}

func (g *fuzzMetadata) str() string {
	c := g.byte()
	if c&0x80 != 0 {
		return fuzzWords[int(c&0x7f)%len(fuzzWords)]
	}
	n := min(int(c&0x0f), len(g.data))
	s := string(g.data[:n])
	g.data = g.data[n:]
	return s
}

func (g *fuzzMetadata) int64() int64 {
	switch c := g.byte(); c % 8 {
	case 0, 1, 2, 3:
		return int64(c%8) - 1 // -1 .. 2
	case 4:
		return math.MaxInt32 + int64(g.byte()%3) - 1
	case 5:
		return math.MinInt32 + int64(g.byte()%3) - 1
	case 6:
		return math.MaxInt64 - int64(g.byte())
	default:
		var v uint64
		for range 8 {
			v = v<<8 | uint64(g.byte())
		}
		return int64(v)
	}
}

// metadata returns the metadata, whether to use upstream mode, and the
// metadata as Decode would give it back.
func (g *fuzzMetadata) metadata() (m, want *Metadata, upstream bool) {
	flags := g.byte()
	m = &Metadata{HardwareCompatible: flags&2 != 0}
	if flags&4 == 0 {
		m.IOBindings = []Binding{}
	}
	if flags&8 == 0 {
		m.AliasedIO = []AliasedIO{}
	}
	nb, na := int(g.byte()%6), int(g.byte()%4)
	for range nb {
		b := Binding{Name: g.str(), IsInput: g.byte()&1 != 0}
		if c := g.byte(); c&1 != 0 {
			b.DType = g.str()
			for range int(c>>1) % 4 {
				b.Shape = append(b.Shape, g.int64())
			}
		}
		m.IOBindings = append(m.IOBindings, b)
	}
	for range na {
		m.AliasedIO = append(m.AliasedIO, AliasedIO{Output: g.str(), Input: g.str(), Kind: g.str()})
	}
	m.DeviceID = g.int64()
	m.SerializedMetadata, m.TargetPlatform = g.str(), g.str()

	c := *m
	c.IOBindings = make([]Binding, len(m.IOBindings))
	for i, b := range m.IOBindings {
		if b.Shape == nil {
			b.Shape = []int64{}
		}
		c.IOBindings[i] = b
	}
	c.AliasedIO = append([]AliasedIO{}, m.AliasedIO...)
	return m, &c, flags&1 != 0
}

func FuzzEncodeRoundTrip(f *testing.F) {
	for _, seed := range encodeSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return // keeps inputs, and minimisation, small
		}
		g := &fuzzMetadata{data: data}
		m, want, upstream := g.metadata()
		engine := g.data
		o := &EncodeOptions{UpstreamCompatible: upstream}
		var buf bytes.Buffer
		n, err := o.Encode(&buf, m, bytes.NewReader(engine), int64(len(engine)))
		if err != nil {
			var me *MetadataError
			if !errors.As(err, &me) {
				t.Fatalf("refusal is %T, want *MetadataError(s): %v", err, err)
			}
			if upstream && checkEncodable(m) == nil {
				t.Fatalf("upstream mode refused encodable metadata: %v", err)
			}
			if !upstream && len(unwritable(m)) == 0 && checkEncodable(m) == nil {
				t.Fatalf("safe mode refused metadata the rules call writable: %v", err)
			}
			return
		}
		if !upstream && len(unwritable(m)) > 0 {
			t.Fatalf("safe mode wrote metadata with unwritable fields %v", unwritable(m))
		}
		if sr, err := o.NewBlobReader(m, bytes.NewReader(engine), int64(len(engine))); err != nil {
			t.Fatalf("NewBlobReader: %v", err)
		} else if sr.Size() != n {
			t.Fatalf("NewBlobReader: size %d; wrote %d", sr.Size(), n)
		}
		blob := buf.Bytes()
		b, err := Decode(bytes.NewReader(blob), int64(len(blob)))
		if err != nil {
			t.Fatalf("Decode of an encoded blob: %v", err)
		}
		if !reflect.DeepEqual(&b.Metadata, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", b.Metadata, *want)
		}
		eng, err := io.ReadAll(b.Engine())
		if err != nil || !bytes.Equal(eng, engine) {
			t.Fatalf("engine round trip failed (%v)", err)
		}
		if !upstream {
			rep, err := Check(bytes.NewReader(blob), int64(len(blob)))
			if err != nil {
				t.Fatal(err)
			}
			if !deployedMatches(rep.Deployed, m) {
				t.Fatalf("safe-mode blob misread by the deployed reader: %+v for %+v", rep.Deployed, m)
			}
			for _, h := range rep.Hazards {
				if h.Kind.Disagreement() || h.Kind == HazardTypeConfused {
					t.Fatalf("safe-mode blob has hazard %v", h)
				}
			}
		}
	})
}

// encodeSeeds are the committed seeds of FuzzEncodeRoundTrip.
func encodeSeeds() [][]byte {
	w := func(i int) byte { return 0x80 | byte(i) }
	return [][]byte{
		{0, 2, 1, w(0), 1, 0, w(1), 0, 0, w(1), w(0), w(14), 0, 0, 0, 'E', 'N', 'G'},                // x in, y out, y<-x user
		{1, 2, 0, w(8), 1, 3, 3, 'f', '3', '2', 6, 2, w(10), 0, 0, 4, 0, 0, 0},                      // upstream, non-ASCII, shapes
		{0, 3, 1, w(0), 1, 0, w(1), 0, 0, w(2), 0, 0, w(2), w(0), w(14), 2, w(4), w(5), 'E'},        // alias named device_id
		{2, 2, 2, w(0), 1, 0, w(0), 0, 0, w(1), w(0), w(13), w(1), w(0), w(14), 3, 0, 0},            // duplicate names and outputs
		{4 | 8, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0},                                              // nil slices, raw device id
		{0, 1, 1, 3, 'a', 0, 'b', 1, 0, w(6), w(0), w(11), 4, 1, 0, 0, 'E'},                         // control character, quoted key
		{0, 5, 0, w(3), 1, 0, w(4), 1, 0, w(5), 0, 0, w(7), 0, 0, w(9), 0, 0, 5, 2, 0, 0, 'X', 'Y'}, // every key-like name
	}
}
