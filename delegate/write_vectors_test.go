package delegate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// safeModeExpectations lists the trt-blob-write cases where the upstream
// writer's blob is misread by the deployed C++ reader (vectors README §2),
// and what the safe writer must do instead: refuse with a *MetadataError
// for each listed field, or (no fields) write a different blob that both
// readers read as intended.
var safeModeExpectations = map[string][]string{
	"names_unicode": nil, // raw UTF-8 names
	"names_control_chars": {
		"io_bindings[0].name", "io_bindings[1].name", "io_bindings[2].name",
		"io_bindings[3].name", "io_bindings[4].name", // not [5]: DEL is written raw
	},
	"name_empty":                     {"io_bindings[0].name"},
	"aliased_output_named_device_id": {"aliased_io[0].output"},
	"device_id_2_pow_31":             {"device_id"},
}

func TestWriteVectors(t *testing.T) {
	dir := sharedDir(t, "trt-blob-write")
	names := caseNames(t, dir, ".py.json")
	if len(names) < 54 {
		t.Fatalf("found %d trt-blob-write cases, want at least 54", len(names))
	}
	misread := map[string]bool{}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			in := readJSON(t, filepath.Join(dir, name+".json"))
			m := vectorMetadata(t, in["metadata"])
			engine, err := hex.DecodeString(in["engine_hex"].(string))
			if err != nil {
				t.Fatal(err)
			}
			want := readFile(t, filepath.Join(dir, name+".blob"))
			cpp := readJSON(t, filepath.Join(dir, name+".cpp.json"))
			py := readJSON(t, filepath.Join(dir, name+".py.json"))

			// Upstream mode: byte-identical, by every route.
			up := &EncodeOptions{UpstreamCompatible: true}
			got := encodeBytes(t, up, m, engine)
			if !bytes.Equal(got, want) {
				t.Fatalf("upstream-mode blob differs from the reference at byte %d\n got %q\nwant %q", firstDiff(got, want), got, want)
			}

			// The Python reader's view: our Decode of the reference blob.
			checkDecodeAgainstPython(t, want, py)
			// The C++ reader's view.
			v, err := ReadDeployed(bytes.NewReader(want), int64(len(want)))
			if err != nil {
				t.Fatal(err)
			}
			checkDeployedAgainstOracle(t, v, cpp)
			if !deployedMatches(v, m) {
				misread[name] = true
			}

			// Safe mode.
			fields, special := safeModeExpectations[name]
			safe, err := EncodedSize(m, int64(len(engine)))
			switch {
			case !special:
				if err != nil {
					t.Fatalf("safe EncodedSize: %v", err)
				}
				if got := encodeBytes(t, nil, m, engine); !bytes.Equal(got, want) || safe != int64(len(want)) {
					t.Fatalf("safe-mode blob differs from the reference (size %d, want %d)", safe, len(want))
				}
			case len(fields) == 0:
				got := encodeBytes(t, nil, m, engine)
				if bytes.Equal(got, want) {
					t.Fatal("safe-mode blob equals the upstream blob the C++ reader misreads")
				}
				checkBothReadersRead(t, got, m, engine)
			default:
				checkRefusal(t, err, fields)
				_, err = Encode(io.Discard, m, bytes.NewReader(engine), int64(len(engine)))
				checkRefusal(t, err, fields)
			}
		})
	}
	var got []string
	for n := range misread {
		got = append(got, n)
	}
	var want []string
	for n := range safeModeExpectations {
		want = append(want, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("cases the C++ reader misreads = %v, want %v (README §2)", got, want)
	}
}

// encodeBytes encodes with Encode, checks EncodedSize and NewBlobReader
// agree, and returns the blob.
func encodeBytes(t *testing.T, o *EncodeOptions, m *Metadata, engine []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := o.Encode(&buf, m, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("Encode returned %d, wrote %d", n, buf.Len())
	}
	size, err := o.EncodedSize(m, int64(len(engine)))
	if err != nil || size != n {
		t.Fatalf("EncodedSize = %d, %v; Encode wrote %d", size, err, n)
	}
	sr, err := o.NewBlobReader(m, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatalf("NewBlobReader: %v", err)
	}
	via, err := io.ReadAll(sr)
	if err != nil || !bytes.Equal(via, buf.Bytes()) {
		t.Fatalf("NewBlobReader content differs from Encode (err %v)", err)
	}
	return buf.Bytes()
}

// checkDecodeAgainstPython compares Decode with a trt_blob_py report for a
// blob Python accepted.
func checkDecodeAgainstPython(t *testing.T, blob []byte, py map[string]any) {
	t.Helper()
	if !py["ok"].(bool) {
		t.Fatal("python rejected a writer blob")
	}
	b, err := Decode(bytes.NewReader(blob), int64(len(blob)))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if want := vectorMetadata(t, py["metadata"]); !reflect.DeepEqual(&b.Metadata, want) {
		t.Fatalf("Decode metadata\n got %+v\nwant %+v", b.Metadata, *want)
	}
	checkHeaderAgainstPython(t, b, py)
}

func checkHeaderAgainstPython(t *testing.T, b *Blob, py map[string]any) {
	t.Helper()
	h := py["header"].(map[string]any)
	if got, want := string(b.Header.Magic[:]), h["magic"].(string); got != want {
		t.Errorf("magic = %q, want %q", got, want)
	}
	if got, want := hex.EncodeToString(b.Header.Reserved[:]), h["reserved_hex"].(string); got != want {
		t.Errorf("reserved = %s, want %s", got, want)
	}
	if got, want := int64(b.Header.EngineSize), jsonInt(t, py["engine_size"]); got != want {
		t.Errorf("engine_size = %d, want %d", got, want)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, b.Engine()); err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(sum.Sum(nil)), py["engine_sha256"].(string); got != want {
		t.Errorf("engine sha256 = %s, want %s", got, want)
	}
}

// deployedMatches reports whether the C++ view equals what m says.
func deployedMatches(v *DeployedView, m *Metadata) bool {
	return v.OK && slices.Equal(v.Inputs, m.Inputs()) && slices.Equal(v.Outputs, m.Outputs()) &&
		slices.Equal(v.AliasedIO, m.AliasedIO) && v.HardwareCompatible == m.HardwareCompatible &&
		int64(v.DeviceID) == m.DeviceID
}

// checkBothReadersRead decodes a blob with both readers and requires each
// to read exactly m and the engine.
func checkBothReadersRead(t *testing.T, blob []byte, m *Metadata, engine []byte) {
	t.Helper()
	b, err := Decode(bytes.NewReader(blob), int64(len(blob)))
	if err != nil {
		t.Fatalf("Decode of the safe blob: %v", err)
	}
	if !reflect.DeepEqual(&b.Metadata, m) {
		t.Fatalf("Decode of the safe blob\n got %+v\nwant %+v", b.Metadata, *m)
	}
	eng, err := io.ReadAll(b.Engine())
	if err != nil || !bytes.Equal(eng, engine) {
		t.Fatalf("engine differs (err %v)", err)
	}
	v, err := ReadDeployed(bytes.NewReader(blob), int64(len(blob)))
	if err != nil {
		t.Fatal(err)
	}
	if !deployedMatches(v, m) {
		t.Fatalf("deployed view of the safe blob %+v does not match the metadata %+v", v, m)
	}
	for _, h := range Hazards(b, nil, v) {
		if h.Kind.Disagreement() {
			t.Fatalf("safe blob: the readers disagree: %v", h)
		}
	}
}

// checkRefusal requires err to join exactly one *MetadataError per field.
func checkRefusal(t *testing.T, err error, fields []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("safe mode accepted metadata the C++ reader misreads; want refusal of %v", fields)
	}
	var got []string
	collectMetadataErrors(err, &got)
	if !slices.Equal(got, fields) {
		t.Fatalf("refused fields = %v, want %v (error: %v)", got, fields, err)
	}
	for _, f := range fields {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

func collectMetadataErrors(err error, out *[]string) {
	var me *MetadataError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			collectMetadataErrors(e, out)
		}
	} else if errors.As(err, &me) {
		*out = append(*out, me.Field)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
