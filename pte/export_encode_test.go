package pte

// EncodeForTest is encodeProgram with the program's own segment table,
// for the external tests that compare the encoder's bytes with goldens.
func EncodeForTest(p *Program) ([]byte, error) { return encodeProgram(p, identityRefs(p), 0) }

// SampleProgramForTest is sampleProgram, for the external tests.
func SampleProgramForTest() *Program { return sampleProgram() }
