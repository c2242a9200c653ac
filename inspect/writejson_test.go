package inspect

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteJSONSameAsEncode: WriteJSON writes, byte for byte, what Encode
// writes of Build's document, for every shared and built program opened
// eagerly and lazily, under every filter, with digests and with a URL;
// and returns the same problems. Where Build refuses, WriteJSON refuses
// with the same error and writes nothing.
func TestWriteJSONSameAsEncode(t *testing.T) {
	compared := 0
	for label, open := range viewFiles(t) {
		f := open()
		for _, opts := range viewOptions(f, &Options{URL: "https://example.com/a.pte"}, &Options{Method: "no such method"}, &Options{Backend: "no such backend"}) {
			doc, berr := Build(f, opts)
			var got bytes.Buffer
			head, werr := WriteJSON(&got, f, opts)
			if berr != nil {
				require.Error(t, werr, "%s %+v: Build refuses (%v), WriteJSON does not", label, opts, berr)
				require.Nil(t, head, "%s: a refusal before writing comes without a document", label)
				require.Equal(t, berr.Error(), werr.Error())
				require.Zero(t, got.Len(), "%s: WriteJSON wrote before refusing", label)
				continue
			}
			require.NoError(t, werr, "%s %+v", label, opts)
			var want bytes.Buffer
			require.NoError(t, Encode(&want, doc))
			if !bytes.Equal(want.Bytes(), got.Bytes()) {
				t.Fatalf("%s %+v: WriteJSON differs from Encode(Build) at byte %d of %d", label, opts, firstDiff(want.Bytes(), got.Bytes()), want.Len())
			}
			require.Equal(t, doc.Problems, head.Problems)
			compared++
		}
	}
	require.NotZero(t, compared)
}

// TestWriteJSONWriteError: a failing writer is reported.
func TestWriteJSONWriteError(t *testing.T) {
	for _, data := range viewPrograms(t) {
		f := openView(data, false)
		if f == nil {
			continue
		}
		doc, err := WriteJSON(failingWriter{}, f, nil)
		require.ErrorIs(t, err, errWriteFailed)
		require.NotNil(t, doc, "an error once writing began comes with the document")
		return
	}
	t.Fatal("no program opened")
}

var errWriteFailed = errors.New("write failed")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWriteFailed }

// firstDiff is the offset of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
