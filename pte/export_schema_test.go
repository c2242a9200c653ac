package pte

import "github.com/ptekit/ptekit/internal/fbverify"

// Hooks for the external test of schema coverage (schema_carry_test.go),
// which also needs package inspect and so cannot live in package pte.

// VerifierRoot is the verifier's description of the Program table.
var VerifierRoot *fbverify.Table = fbProgram

// EncodeDecode encodes p with its own segment table, verifies the bytes
// and decodes them again, as Write and Open do around the flatbuffer
// region.
func EncodeDecode(p *Program) (*Program, error) {
	buf, err := encodeProgram(p, &segmentRefs{layout: p.Segments}, 0)
	if err != nil {
		return nil, err
	}
	v, err := verifyProgramBuffer(buf)
	if err != nil {
		return nil, err
	}
	q, _ := decodeProgramWith(buf, v, true, false)
	return q, nil
}
