package export

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// freedWriter is an io.Writer that, on its first write (the program is
// encoded and checked by then), collects garbage until freed is set or a
// second has passed, and records whether it was.
type freedWriter struct {
	freed  *atomic.Bool
	seen   bool
	wasSet bool
}

func (w *freedWriter) Write(p []byte) (int, error) {
	if !w.seen {
		w.seen = true
		for deadline := time.Now().Add(time.Second); !w.freed.Load() && time.Now().Before(deadline); {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		w.wasSet = w.freed.Load()
	}
	return len(p), nil
}

// TestWriteReleasesModel: once the program is encoded, the export holds
// its model no longer, so that the collector can free it while the
// writer reads the encoding back and writes the payloads (at 65,536
// engines the model is about a third of the live heap, issue 24).
func TestWriteReleasesModel(t *testing.T) {
	b, err := build(&Program{Methods: []*Method{chainMethod("forward", 4)}}, nil)
	require.NoError(t, err)
	defer b.close()
	var freed atomic.Bool
	runtime.SetFinalizer(b.prog, func(*pte.Program) { freed.Store(true) })
	w := &freedWriter{freed: &freed}
	_, err = b.writeTo(w, false)
	require.NoError(t, err)
	require.True(t, w.seen, "the program was written")
	assert.True(t, w.wasSet, "the program's model is still reachable while its bytes are written")
}
