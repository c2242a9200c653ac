package pte

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// wrPipeSource returns a SequentialSource fed through an io.Pipe by a
// goroutine writing data in odd-sized chunks, and a counter of the bytes
// the pipe delivered.
func wrPipeSource(t *testing.T, data []byte, size int64) (*io.SectionReader, *wrCountingReader) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		for b := data; len(b) > 0; {
			n := min(len(b), 77777)
			if _, err := pw.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
		pw.Close()
	}()
	t.Cleanup(func() { pr.Close() })
	c := &wrCountingReader{r: pr}
	return SequentialSource(c, size), c
}

// wrCountingReader counts the bytes read through it.
type wrCountingReader struct {
	r io.Reader
	n int64
}

func (c *wrCountingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestWriteSequentialPipe: several MiB of engine from a pipe are written,
// to a buffer and to a file, each read exactly once.
func TestWriteSequentialPipe(t *testing.T) {
	const size = 5<<20 + 123
	engine := cpPattern(size, 3)
	other := cpPattern(4096, 9)
	for _, dest := range []string{"buffer", "file"} {
		t.Run(dest, func(t *testing.T) {
			src, count := wrPipeSource(t, engine, size)
			p := wrProgram(2)
			segs := []*io.SectionReader{wrSection(nil), src, wrSection(other)}
			var b []byte
			switch dest {
			case "buffer":
				var buf bytes.Buffer
				if _, err := Write(&buf, p, segs, nil); err != nil {
					t.Fatal(err)
				}
				b = buf.Bytes()
			case "file":
				out := filepath.Join(t.TempDir(), "out.pte")
				if _, err := WriteFile(out, p, segs, nil); err != nil {
					t.Fatal(err)
				}
				var err error
				if b, err = os.ReadFile(out); err != nil {
					t.Fatal(err)
				}
			}
			if count.n != size {
				t.Errorf("pipe delivered %d bytes, want %d", count.n, size)
			}
			f := wrOpenBytes(t, b)
			for di, want := range [][]byte{engine, other} {
				if got, err := wrData(f.DelegateData(0, di)); err != nil || !bytes.Equal(got, want) {
					t.Errorf("delegate %d payload differs (%v)", di, err)
				}
			}
		})
	}
}

// TestWriteSequentialDedup: Dedup never reads a sequential source to
// compare it (it could not be read again to write it); the same source
// given twice is still recognised without reading.
func TestWriteSequentialDedup(t *testing.T) {
	payload := cpPattern(300000, 5)
	seqA, countA := wrPipeSource(t, payload, int64(len(payload)))
	seqB, countB := wrPipeSource(t, payload, int64(len(payload)))
	p := wrProgram(4)
	// Payloads: 0 empty, 1 seqA, 2 same bytes in memory, 3 seqB, 4 seqA again.
	segs := []*io.SectionReader{wrSection(nil), seqA, wrSection(bytes.Clone(payload)), seqB, seqA}
	var buf bytes.Buffer
	info, err := Write(&buf, p, segs, &WriteOptions{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 1}; wrDiff(info.SegmentIndex, want) != "" {
		t.Errorf("SegmentIndex = %v, want %v", info.SegmentIndex, want)
	}
	if countA.n != int64(len(payload)) || countB.n != int64(len(payload)) {
		t.Errorf("sources read %d and %d bytes, want %d each", countA.n, countB.n, len(payload))
	}
	f := wrOpenBytes(t, buf.Bytes())
	for di := range 4 {
		if got, err := wrData(f.DelegateData(0, di)); err != nil || !bytes.Equal(got, payload) {
			t.Errorf("delegate %d payload differs (%v)", di, err)
		}
	}
}

// TestWriteSequentialErrors: a sequential source read twice or ending
// early fails with a clear error and leaves no file.
func TestWriteSequentialErrors(t *testing.T) {
	payload := cpPattern(1000, 1)
	t.Run("given twice without Dedup", func(t *testing.T) {
		src, _ := wrPipeSource(t, payload, int64(len(payload)))
		_, err := Write(io.Discard, wrProgram(2), []*io.SectionReader{wrSection(nil), src, src}, nil)
		var se *SegmentError
		if !errors.As(err, &se) || se.Index != 2 || !errors.Is(err, ErrNotSequential) {
			t.Errorf("err = %v, want a *SegmentError for payload 2 matching ErrNotSequential", err)
		}
	})
	t.Run("ends early", func(t *testing.T) {
		src, _ := wrPipeSource(t, payload, int64(len(payload))+10)
		dir := t.TempDir()
		_, err := WriteFile(filepath.Join(dir, "out.pte"), wrProgram(1), []*io.SectionReader{wrSection(nil), src}, nil)
		var se *SegmentError
		if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("err = %v, want a *SegmentError for payload 1 matching io.ErrUnexpectedEOF", err)
		}
		if names := wrDirNames(t, dir); len(names) != 0 {
			t.Errorf("left %v", names)
		}
	})
	t.Run("ReadAt out of order", func(t *testing.T) {
		src := SequentialSource(bytes.NewReader(payload), int64(len(payload)))
		b := make([]byte, 10)
		if n, err := src.ReadAt(b, 0); n != 10 || err != nil || !bytes.Equal(b, payload[:10]) {
			t.Fatalf("first read: %d, %v", n, err)
		}
		for _, off := range []int64{0, 5, 11} {
			if _, err := src.ReadAt(b, off); !errors.Is(err, ErrNotSequential) {
				t.Errorf("ReadAt at %d: %v, want ErrNotSequential", off, err)
			}
		}
		rest, err := io.ReadAll(io.NewSectionReader(src, 10, int64(len(payload))))
		if err != nil || !bytes.Equal(rest, payload[10:]) {
			t.Errorf("reading on in order: %d bytes, %v", len(rest), err)
		}
	})
}
