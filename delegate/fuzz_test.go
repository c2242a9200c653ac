package delegate

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seeds in testdata/fuzz")

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
		copy(b[16:], appendLE32(nil, 4))
		out = append(out, b)
	}
	return out
}

// addVectorSeeds adds the shared conformance blobs, when present, as
// uncommitted seeds.
func addVectorSeeds(f *testing.F) {
	for _, set := range []string{"trt-blob-read", "trt-blob-write"} {
		m, _ := filepath.Glob(filepath.Join("..", "..", "shared", "vectors", set, "*.blob"))
		for _, p := range m {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
}

// TestFuzzSeeds keeps the committed seed files in step with seedBlobs.
func TestFuzzSeeds(t *testing.T) {
	for _, target := range []string{"FuzzDecode", "FuzzReadDeployed"} {
		dir := filepath.Join("testdata", "fuzz", target)
		for i, b := range seedBlobs(t) {
			path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if *updateSeeds {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != want {
				t.Errorf("%s is missing or stale; run go test -run TestFuzzSeeds -update-seeds", path)
			}
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

func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("x", "y", "float32", int64(2), true, "y", "x", "user", false, int64(0), "", "linux_x86_64", []byte("ENGINE"), false)
	f.Add("caf\u00e9", "\u540d\u524d", "weird dtype \u00b5", int64(-1), false, "", "", "", true, int64(3), "s\x00\x7f", "", []byte{}, false)
	f.Add("a\nb", "", "", int64(1)<<40, true, "device_id", "x", "user", false, int64(1)<<31, "", "", []byte("E"), true)
	f.Add(`q"\`, "hardware_compatible", "", int64(0), true, `x"hardware_compatible`, "y", "kv_cache_update", true, int64(-1), "", "", []byte("EE"), false)
	f.Fuzz(func(t *testing.T, in0, out0, dtype string, dim int64, firstIn bool, aOut, aIn, kind string,
		hw bool, dev int64, sm, tp string, engine []byte, upstream bool) {
		m := &Metadata{
			IOBindings: []Binding{
				{Name: in0, DType: dtype, Shape: []int64{dim, 1}, IsInput: firstIn},
				{Name: out0, Shape: []int64{}},
			},
			AliasedIO:          []AliasedIO{},
			HardwareCompatible: hw, DeviceID: dev, SerializedMetadata: sm, TargetPlatform: tp,
		}
		if aOut != "" || aIn != "" || kind != "" {
			m.AliasedIO = append(m.AliasedIO, AliasedIO{Output: aOut, Input: aIn, Kind: kind})
		}
		o := &EncodeOptions{UpstreamCompatible: upstream}
		var buf bytes.Buffer
		n, err := o.Encode(&buf, m, bytes.NewReader(engine), int64(len(engine)))
		if err != nil {
			if _, ok := err.(interface{ Unwrap() []error }); !ok {
				if _, ok := err.(*MetadataError); !ok {
					t.Fatalf("refusal is %T, want *MetadataError(s): %v", err, err)
				}
			}
			if upstream {
				// Upstream mode refuses only what no writer can represent.
				if err := checkEncodable(m); err == nil {
					t.Fatalf("upstream mode refused encodable metadata: %v", err)
				}
			}
			return
		}
		if size, err := o.EncodedSize(m, int64(len(engine))); err != nil || size != n {
			t.Fatalf("EncodedSize %d, %v; wrote %d", size, err, n)
		}
		blob := buf.Bytes()
		b, err := Decode(bytes.NewReader(blob), int64(len(blob)))
		if err != nil {
			t.Fatalf("Decode of an encoded blob: %v", err)
		}
		if !reflect.DeepEqual(&b.Metadata, m) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", b.Metadata, *m)
		}
		eng, err := io.ReadAll(b.Engine())
		if err != nil || !bytes.Equal(eng, engine) {
			t.Fatalf("engine round trip failed (%v)", err)
		}
		if !upstream {
			v, err := ReadDeployed(bytes.NewReader(blob), int64(len(blob)))
			if err != nil {
				t.Fatal(err)
			}
			if !deployedMatches(v, m) {
				t.Fatalf("safe-mode blob misread by the deployed reader: %+v for %+v", v, m)
			}
		}
	})
}
