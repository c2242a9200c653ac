package executor

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// zeroBlob is a TensorRT blob held in no memory: a header claiming
// metadataSize bytes of metadata right after it and an empty engine after
// that, then zeros.
type zeroBlob struct {
	hdr  [delegate.HeaderSize]byte
	size int64
}

func newZeroBlob(metadataSize uint32) *zeroBlob {
	b := &zeroBlob{}
	copy(b.hdr[:], delegate.MagicTR01[:])
	engineOff := (uint64(delegate.HeaderSize) + uint64(metadataSize) + delegate.EngineAlignment - 1) &^ (delegate.EngineAlignment - 1)
	binary.LittleEndian.PutUint32(b.hdr[4:], delegate.HeaderSize) // metadata_offset
	binary.LittleEndian.PutUint32(b.hdr[8:], metadataSize)        // metadata_size
	binary.LittleEndian.PutUint32(b.hdr[12:], uint32(engineOff))  // engine_offset
	// engine_size (bytes 16..24) stays 0.
	b.size = int64(engineOff)
	return b
}

func (b *zeroBlob) ReadAt(p []byte, off int64) (int, error) {
	if off >= b.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), b.size-off))
	clear(p[:n])
	if off < delegate.HeaderSize {
		copy(p[:n], b.hdr[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (b *zeroBlob) section() *io.SectionReader { return io.NewSectionReader(b, 0, b.size) }

// TestZeroBlobHeader checks the helper against the delegate package's own
// reader, so the tests below build the blob they mean to.
func TestZeroBlobHeader(t *testing.T) {
	b := newZeroBlob(100)
	v, err := delegate.ReadDeployed(b, b.size)
	if err != nil {
		t.Fatal(err)
	}
	if v.MetadataOffset != delegate.HeaderSize || v.MetadataSize != 100 || v.EngineOffset != 144 || v.EngineSize != 0 {
		t.Fatalf("header read as %+v", v)
	}
}

// TestTensorRTInitMetadataUnread: a blob whose metadata is larger than
// ptekit reads is not a parse failure but an unknown outcome
// (ErrOutcomeUnknown, NotSupported), found without reading the metadata or
// deserializing an engine; metadata at the limit is read and judged.
func TestTensorRTInitMetadataUnread(t *testing.T) {
	tests := []struct {
		name         string
		metadataSize uint32
		unknown      bool
	}{
		{"at the limit", delegate.MaxMetadataSize, false},
		{"one byte over", delegate.MaxMetadataSize + 1, true},
		{"near the 4 GiB header maximum", 1<<32 - 1 - 64, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blob := newZeroBlob(tc.metadataSize)
			cr := testkit.NewCountingReaderAt(blob)
			fac := &fakeFactory{}
			log, records := newCapture()
			ictx := &InitContext{Method: "forward", BackendID: TensorRTBackendID, Logger: log}
			payload := &pte.Payload{SectionReader: io.NewSectionReader(cr, 0, blob.size)}
			h, err := NewTensorRTBackend(fac).Init(ictx, payload, nil)
			if h != nil {
				t.Fatalf("Init returned a handle")
			}
			if len(fac.engines) != 0 {
				t.Errorf("an engine was deserialized")
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("Init error = %v, want an *Error", err)
			}
			if !tc.unknown {
				// The zero metadata is read and has no io_bindings.
				if re.Code != CodeInvalidProgram || errors.Is(err, ErrOutcomeUnknown) ||
					!strings.Contains(err.Error(), "failed to parse TensorRT blob") {
					t.Fatalf("Init error = %v, want a parse failure", err)
				}
				return
			}
			if re.Code != CodeNotSupported || !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("Init error = %v (code %v), want NotSupported wrapping ErrOutcomeUnknown", err, re.Code)
			}
			msg := err.Error()
			for _, want := range []string{"metadata of", "not read by ptekit", "outcome is unknown", "at blob byte 32"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "failed to parse") {
				t.Errorf("message %q calls it a parse failure", msg)
			}
			if cr.Bytes() > 2*delegate.HeaderSize {
				t.Errorf("Init read %d bytes of the blob", cr.Bytes())
			}
			recs := records()
			if len(recs) != 1 || recs[0].Level != slog.LevelWarn || !strings.Contains(recs[0].Msg, "not read by ptekit") ||
				recs[0].Attrs["metadata_size"] != uint64(tc.metadataSize) {
				t.Errorf("log records %+v, want one warning with metadata_size", recs)
			}
		})
	}
}

// TestPlanMetadataUnread plans a program whose TensorRT blob claims more
// metadata than ptekit reads: the method is not OK, its error is marked
// unknown rather than invalid_program, and LoadMethod wraps
// ErrOutcomeUnknown with the delegate located.
func TestPlanMetadataUnread(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB program")
	}
	f := programWithBlob(t, newZeroBlob(delegate.MaxMetadataSize+1).section())
	pp, err := PlanProgram(f, PlanOptions{Streamable: i64(gib)})
	if err != nil {
		t.Fatal(err)
	}
	m := pp.Methods[0]
	if m.OK || m.Error == nil || !m.Error.Unknown || m.Error.Kind != "not_supported" ||
		m.Error.Delegate == nil || *m.Error.Delegate != 0 || !strings.Contains(m.Error.Message, "not read by ptekit") {
		t.Fatalf("method plan %+v (error %+v), want an unknown outcome at delegate 0", m, m.Error)
	}

	_, err = initWith(t, f, &fakeFactory{})
	var re *Error
	if !errors.As(err, &re) || !errors.Is(err, ErrOutcomeUnknown) || re.Method != "forward" || re.Delegate != 0 ||
		re.Backend != TensorRTBackendID {
		t.Fatalf("LoadMethod error = %v, want ErrOutcomeUnknown located at forward delegate 0", err)
	}

	// A blob the deployed reader rejects is a plain failure, not unknown.
	bad := programWithBlob(t, newZeroBlob(16).section())
	pp, err = PlanProgram(bad, PlanOptions{Streamable: i64(gib)})
	if err != nil {
		t.Fatal(err)
	}
	if e := pp.Methods[0].Error; e == nil || e.Unknown || e.Kind != "invalid_program" {
		t.Fatalf("plan error %+v, want a known invalid_program", e)
	}
}
