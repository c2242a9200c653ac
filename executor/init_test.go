package executor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// programWithBlob returns a one-engine program whose TensorRT delegate's
// payload is blob.
func programWithBlob(t *testing.T, blob *io.SectionReader) *pte.File {
	t.Helper()
	return buildProgram(t, testMethod{name: "forward", calls: []trtCall{{blob: blob}}})
}

func blobFor(t *testing.T, device int64) *io.SectionReader {
	t.Helper()
	m := &delegate.Metadata{DeviceID: device, IOBindings: []delegate.Binding{{Name: "in", IsInput: true}, {Name: "out"}}}
	engine := []byte("ENGINE-BYTES")
	r, err := upstreamBlob(m, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func initWith(t *testing.T, f *pte.File, fac *fakeFactory) (*Method, error) {
	t.Helper()
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, NewTensorRTBackend(fac))
	prog, err := Load(f, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	m, err := prog.LoadMethod("forward", nil)
	if err == nil {
		t.Cleanup(func() { m.Close() })
	}
	return m, err
}

func TestTensorRTInitDeviceAndEngine(t *testing.T) {
	fac := &fakeFactory{template: fakeEngine{streamable: gib}}
	m, err := initWith(t, programWithBlob(t, blobFor(t, 3)), fac)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Plans()[0]
	if p.Device != 3 || fac.engines[0].device != 3 || fac.engines[0].engineSize != int64(len("ENGINE-BYTES")) ||
		strings.Join(p.Inputs, ",") != "in" || strings.Join(p.Outputs, ",") != "out" {
		t.Errorf("plan %+v, engine on device %d with %d bytes", p, fac.engines[0].device, fac.engines[0].engineSize)
	}
}

func TestTensorRTInitFailures(t *testing.T) {
	// A valid blob whose engine_size is patched to 2^64-16: the engine
	// offset is a multiple of 16, so offset+size wraps in 64 bits.
	wraps, err := io.ReadAll(blobFor(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(wraps[16:24], 1<<64-16)
	raw := func(b []byte) *io.SectionReader { return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b))) }
	tests := []struct {
		name   string
		blob   *io.SectionReader
		fac    *fakeFactory
		errSub string
	}{
		{"blob too short", raw([]byte("TR01 short")), &fakeFactory{}, "failed to parse TensorRT blob"},
		{"not a blob", raw(bytes.Repeat([]byte{'x'}, 64)), &fakeFactory{}, "failed to parse TensorRT blob"},
		{"engine range wraps", raw(wraps), &fakeFactory{}, "wraps around"},
		{"negative device", blobFor(t, -1), &fakeFactory{}, "cudaSetDevice(-1) failed"},
		{"deserialize fails", blobFor(t, 0), &fakeFactory{err: errors.New("bad engine")}, "failed to deserialize TensorRT engine: bad engine"},
		{"context fails", blobFor(t, 0), &fakeFactory{template: fakeEngine{ctxErr: errors.New("no memory")}}, "failed to create execution context: no memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := initWith(t, programWithBlob(t, tc.blob), tc.fac)
			var re *Error
			if !errors.As(err, &re) || re.Code != CodeInvalidProgram || re.Delegate != 0 || !strings.Contains(err.Error(), tc.errSub) {
				t.Fatalf("error = %v; want InvalidProgram containing %q", err, tc.errSub)
			}
			for _, e := range tc.fac.engines {
				if !e.closed {
					t.Error("engine leaked")
				}
			}
		})
	}
}

// TestPlanReadsNoEngineBytes plans a program with a 1 MiB engine and checks that
// the engine bytes are never read: only the program and the blob's header
// and metadata are.
func TestPlanReadsNoEngineBytes(t *testing.T) {
	var buf bytes.Buffer
	src := buildProgram(t, progLargeEngine...)
	if _, err := io.Copy(&buf, io.NewSectionReader(src.ReaderAt(), 0, 1<<40)); err != nil {
		t.Fatal(err)
	}
	cr, size := testkit.NewCountingReaderAt(bytes.NewReader(buf.Bytes())), int64(buf.Len())
	f, err := pte.NewFile(cr, size)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := PlanProgram(f, PlanOptions{Streamable: i64(gib)})
	if err != nil || !pp.Methods[0].OK {
		t.Fatalf("plan: %+v, %v", pp, err)
	}
	if cr.Bytes() > 64<<10 {
		t.Errorf("planning read %d bytes of a %d-byte file", cr.Bytes(), size)
	}
}

// TestReportPlanReplacesOwnReport: a delegate that reports twice during
// its Init keeps its last report; the next delegate's report is added
// after it; reports of other methods are not touched.
func TestReportPlanReplacesOwnReport(t *testing.T) {
	var plans []*Plan
	report := func(method string, di int, device int) {
		c := &InitContext{Method: method, DelegateIndex: di, BackendID: "b", plans: &plans}
		c.ReportPlan(&Plan{Device: device})
	}
	report("m", 0, 1)
	report("m", 0, 2) // replaces
	report("m", 1, 3)
	report("m", 1, 4) // replaces
	report("n", 1, 5) // another method's delegate 1: added
	got := make([]string, len(plans))
	for i, p := range plans {
		got[i] = fmt.Sprintf("%s/%d/%d", p.Method, p.Delegate, p.Device)
	}
	if want := []string{"m/0/2", "m/1/4", "n/1/5"}; !slices.Equal(got, want) {
		t.Fatalf("plans %v, want %v", got, want)
	}
}
