package delegate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// unwritable lists, by the deployed C++ reader's documented rules (vectors
// README §2, trt-delegate.md §1.4-1.5), the fields of m that no blob can
// carry to that reader unchanged, one entry per field: an empty binding
// name (dropped), a name already used by an earlier binding (TensorRT
// names are unique), an empty aliased output or input (entry dropped) or
// kind (read as kv_cache_update), a name or aliased string with a control
// character (JSON can only escape it, and the scanner turns escapes into
// letters), and a device id outside a C++ int (wraps) or negative (init
// fails); then what initRefuses lists. DEL, non-ASCII and names that look
// like keys are writable: as raw bytes, and with the scalars before
// aliased_io.
func unwritable(m *Metadata) []string {
	var out []string
	ctl := func(s string) bool { return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 }) >= 0 }
	seen := map[string]bool{}
	for i, b := range m.IOBindings {
		if b.Name == "" || seen[b.Name] || ctl(b.Name) {
			out = append(out, fmt.Sprintf("io_bindings[%d].name", i))
		}
		seen[b.Name] = true
	}
	for i, a := range m.AliasedIO {
		for _, f := range []struct{ k, v string }{{"output", a.Output}, {"input", a.Input}, {"kind", a.Kind}} {
			if f.v == "" || ctl(f.v) {
				out = append(out, fmt.Sprintf("aliased_io[%d].%s", i, f.k))
			}
		}
	}
	if m.DeviceID != int64(int32(m.DeviceID)) || m.DeviceID < 0 {
		out = append(out, "device_id")
	}
	return append(out, initRefuses(m)...)
}

// initRefuses lists, by TensorRTBackend init's documented checks
// (trt-delegate.md), the aliased_io fields of m that init refuses although
// the deployed reader reads them as written: a non-empty kind other than
// kv_cache_update and user, and, when m names bindings, a non-empty output
// or input that is not a binding of that direction.
func initRefuses(m *Metadata) []string {
	var out []string
	for i, a := range m.AliasedIO {
		if len(m.IOBindings) > 0 && a.Output != "" && !slices.Contains(m.Outputs(), a.Output) {
			out = append(out, fmt.Sprintf("aliased_io[%d].output", i))
		}
		if len(m.IOBindings) > 0 && a.Input != "" && !slices.Contains(m.Inputs(), a.Input) {
			out = append(out, fmt.Sprintf("aliased_io[%d].input", i))
		}
		if a.Kind != "" && a.Kind != KindKVCacheUpdate && a.Kind != KindUser {
			out = append(out, fmt.Sprintf("aliased_io[%d].kind", i))
		}
	}
	return out
}

func TestWriteVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "trt-blob-write")
	names := caseNames(t, dir, ".py.json") // fails when there are none
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			in := readJSON(t, filepath.Join(dir, name+".json"))
			engine, err := hex.DecodeString(in["engine_hex"].(string))
			if err != nil {
				t.Fatal(err)
			}
			want := readFile(t, filepath.Join(dir, name+".blob"))
			cpp := readJSON(t, filepath.Join(dir, name+".cpp.json"))
			py := readJSON(t, filepath.Join(dir, name+".py.json"))

			// The readers' views of the reference blob.
			pb, err := DecodePython(bytes.NewReader(want), int64(len(want)))
			checkPythonVerdict(t, pb, err, py)
			v, err := ReadDeployed(bytes.NewReader(want), int64(len(want)))
			if err != nil {
				t.Fatal(err)
			}
			checkDeployedAgainstOracle(t, v, cpp)

			m, err := vectorMetadata(in["metadata"])
			if err != nil {
				// Not representable in Metadata (a device_id beyond int64):
				// the strict reading refuses it, naming the field.
				_, derr := Decode(bytes.NewReader(want), int64(len(want)))
				var be *BlobError
				if !errors.As(derr, &be) || !strings.HasPrefix(be.Field, "metadata.") {
					t.Fatalf("metadata %v; Decode error %v, want a *BlobError naming the field", err, derr)
				}
				return
			}
			checkDecodeAgainstPython(t, want, py)

			// Upstream mode: byte-identical, by every route.
			got := encodeBytes(t, &EncodeOptions{UpstreamCompatible: true}, m, engine)
			if !bytes.Equal(got, want) {
				t.Fatalf("upstream-mode blob differs from the reference at byte %d\n got %q\nwant %q", firstDiff(got, want), got, want)
			}

			// Safe mode, by rule.
			fields := unwritable(m)
			switch {
			case len(fields) > 0:
				_, err := NewBlobReader(m, bytes.NewReader(engine), int64(len(engine)))
				checkRefusal(t, err, fields)
				_, err = Encode(io.Discard, m, bytes.NewReader(engine), int64(len(engine)))
				checkRefusal(t, err, fields)
			case deployedMatches(v, m):
				if got := encodeBytes(t, nil, m, engine); !bytes.Equal(got, want) {
					t.Fatalf("safe-mode blob differs from the reference, which both readers read as meant (at byte %d)", firstDiff(got, want))
				}
			default:
				got := encodeBytes(t, nil, m, engine)
				if bytes.Equal(got, want) {
					t.Fatal("safe-mode blob equals the upstream blob the C++ reader misreads")
				}
				checkBothReadersRead(t, got, m, engine)
			}
		})
	}
}

// encodeBytes encodes with Encode, checks NewBlobReader agrees (size and
// bytes), and returns the blob.
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
	sr, err := o.NewBlobReader(m, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatalf("NewBlobReader: %v", err)
	}
	if sr.Size() != n {
		t.Fatalf("NewBlobReader: size %d; Encode wrote %d", sr.Size(), n)
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
	want, err := vectorMetadata(py["metadata"])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&b.Metadata, want) {
		t.Fatalf("Decode metadata\n got %+v\nwant %+v", b.Metadata, *want)
	}
	checkHeaderAgainstPython(t, &b.Header, b.Engine(), py)
}

func checkHeaderAgainstPython(t *testing.T, hd *Header, engine *io.SectionReader, py map[string]any) {
	t.Helper()
	h := py["header"].(map[string]any)
	if got, want := string(hd.Magic[:]), h["magic"].(string); got != want {
		t.Errorf("magic = %q, want %q", got, want)
	}
	if got, want := hex.EncodeToString(hd.Reserved[:]), h["reserved_hex"].(string); got != want {
		t.Errorf("reserved = %s, want %s", got, want)
	}
	if got, want := int64(hd.EngineSize), jsonInt(t, py["engine_size"]); got != want {
		t.Errorf("engine_size = %d, want %d", got, want)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, engine); err != nil {
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
