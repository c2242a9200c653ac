package jsonerr_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/jsonerr"
	"github.com/ptekit/ptekit/pte"
)

// TestNew: each kind of error gets its ExecuTorch class, offset and path;
// a usage error is "usage" and a NotFound sentinel, wrapped, "not_found".
func TestNew(t *testing.T) {
	fe := &pte.FormatError{Code: pte.CodeInvalidProgram, Off: 12, Path: "execution_plan[0]", Msg: "bad"}
	o := jsonerr.New(fmt.Errorf("open x: %w", fe))
	require.NotNil(t, o.Offset)
	assert.Equal(t, int64(12), *o.Offset)
	assert.Equal(t, "invalid_program", o.Kind)
	assert.Equal(t, "execution_plan[0]", o.Path)

	assert.Equal(t, "not_found", jsonerr.New(fmt.Errorf("%w %q", inspect.ErrNoMethod, "x")).Kind)
	assert.Equal(t, "not_found", jsonerr.New(fmt.Errorf("%w %q", inspect.ErrNoBackend, "x")).Kind)
	assert.Equal(t, "invalid_argument", jsonerr.New(executor.Errorf(pte.CodeInvalidArgument, "no")).Kind)
	assert.Equal(t, "usage", jsonerr.New(&jsonerr.UsageError{Msg: "bad flag"}).Kind)
	o = jsonerr.New(errors.New("read  x:\n  denied"))
	assert.Equal(t, "access_failed", o.Kind)
	assert.Equal(t, "read x: denied", o.Message, "one line")
	assert.Nil(t, o.Offset)
}

// TestWriteAsInspectEncodes: the object jsonerr.Write prints (pteexport)
// is byte for byte what inspect.Encode prints of it (pteinspect's other
// documents), HTML characters unescaped.
func TestWriteAsInspectEncodes(t *testing.T) {
	o := jsonerr.New(&jsonerr.UsageError{Msg: `--x <a> & "b"`})
	var got, want bytes.Buffer
	require.NoError(t, jsonerr.Write(&got, o))
	require.NoError(t, inspect.Encode(&want, struct {
		Error *jsonerr.Object `json:"error"`
	}{o}))
	assert.Equal(t, want.String(), got.String())
	assert.Contains(t, got.String(), `<a> & \"b\"`)
}
