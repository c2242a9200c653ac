package inspect

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFloatLikePythonRepr(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{-2.5, "-2.5"},
		{0.1, "0.1"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1.5e-7, "1.5e-07"},
		{1234567, "1234567.0"},
		{1e15, "1000000000000000.0"},
		{1e16, "1e+16"},
		{123456789012345678, "1.2345678901234568e+17"},
		{0.0006798750255256891, "0.0006798750255256891"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{math.Inf(1), `"inf"`},
		{math.Inf(-1), `"-inf"`},
		{math.NaN(), `"nan"`},
	}
	for _, c := range cases {
		got, err := Float(c.in).MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got), "%v", c.in)

		var back Float
		require.NoError(t, json.Unmarshal(got, &back))
		if math.IsNaN(c.in) {
			assert.True(t, math.IsNaN(float64(back)))
		} else {
			assert.Equal(t, c.in, float64(back))
			assert.Equal(t, math.Signbit(c.in), math.Signbit(float64(back)))
		}
	}
	var f Float
	assert.Error(t, json.Unmarshal([]byte(`"infinity"`), &f))
}

func TestEnumJSON(t *testing.T) {
	b, err := json.Marshal([]Enum{{Name: "FLOAT", Value: 6}, {Value: 200}, {Value: -3}})
	require.NoError(t, err)
	assert.Equal(t, `["FLOAT",200,-3]`, string(b))

	var got []Enum
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, []Enum{{Name: "FLOAT"}, {Value: 200}, {Value: -3}}, got)
	assert.Equal(t, "FLOAT", got[0].String())
	assert.Equal(t, "200", got[1].String())
	var e Enum
	assert.Error(t, json.Unmarshal([]byte(`true`), &e))
}

func TestDigestThreeStates(t *testing.T) {
	type holder struct {
		SHA Digest `json:"sha256,omitzero"`
	}
	for _, c := range []struct {
		d    Digest
		want string
	}{
		{Digest{}, `{}`},
		{Digest{Unavailable: true}, `{"sha256":null}`},
		{Digest{Hex: "ab"}, `{"sha256":"ab"}`},
	} {
		b, err := json.Marshal(holder{c.d})
		require.NoError(t, err)
		assert.Equal(t, c.want, string(b))
		var back holder
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c.d, back.SHA)
	}
}

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	b, err := Marshal(map[string]string{"k": "<a&b>"})
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"k\": \"<a&b>\"\n}\n", string(b))
}
