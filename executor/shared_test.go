package executor

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// openVector opens vectors/pte/NAME.pte.
func openVector(t testing.TB, name string) *pte.File {
	t.Helper()
	f, err := pte.Open(testkit.SharedDir(t, "vectors/pte/"+name+".pte"))
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// logRecord is one captured slog record.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

// captureHandler is a slog.Handler that keeps every record.
type captureHandler struct {
	mu      *sync.Mutex
	records *[]logRecord
	attrs   []slog.Attr
}

func newCapture() (*slog.Logger, func() []logRecord) {
	h := &captureHandler{mu: &sync.Mutex{}, records: &[]logRecord{}}
	return slog.New(h), func() []logRecord {
		h.mu.Lock()
		defer h.mu.Unlock()
		return append([]logRecord(nil), *h.records...)
	}
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.Any()
	}
	r.Attrs(func(a slog.Attr) bool { rec.Attrs[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	*h.records = append(*h.records, rec)
	h.mu.Unlock()
	return nil
}
func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}
func (h *captureHandler) WithGroup(string) slog.Handler { return h }
