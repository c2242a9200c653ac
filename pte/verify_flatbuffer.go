package pte

import (
	"errors"
	"reflect"

	"github.com/ptekit/ptekit/internal/fbverify"
)

// This file describes schema/program.fbs to the FlatBuffers verifier in
// internal/fbverify, which runs over the flatbuffer region before anything
// decodes it, so that the decoder and the generated accessors can trust
// every offset. docs/verifier-rules.md lists each rule and the upstream
// check it mirrors; rules ExecuTorch does not apply give warning findings.

// fbProgram describes the Program table to the verifier, slot by slot
// (pte-format.md section 5.1). It is derived from the model (schemaTable),
// whose fields are the schema's in order; TestSchemaFieldsCarried compares
// it with schema/program.fbs.
var fbProgram = schemaTable(reflect.TypeFor[Program](), map[reflect.Type]*fbverify.Table{})

// schemaTable returns the verifier's description of model table t: one
// slot per field (SchemaField), a scalar by its size, a byte vector
// aliased unless it is a list of numbers, a union as its tag slot and its
// value slot. done holds the tables described so far.
func schemaTable(t reflect.Type, done map[reflect.Type]*fbverify.Table) *fbverify.Table {
	if vt := done[t]; vt != nil {
		return vt
	}
	vt := &fbverify.Table{Name: t.Name()}
	done[t] = vt
	for i := range t.NumField() {
		name, numbers, ok := SchemaField(t, i)
		if !ok {
			continue
		}
		ft := t.Field(i).Type
		switch {
		case ft.Kind() == reflect.String:
			vt.Fields = append(vt.Fields, fbverify.String(name))
		case ft.Kind() == reflect.Pointer:
			vt.Fields = append(vt.Fields, fbverify.Sub(name, schemaTable(ft.Elem(), done)))
		case ft.Kind() == reflect.Interface:
			var members []*fbverify.Table
			for _, mt := range unionMembers[ft] {
				tag := int(reflect.New(mt).Method(0).Call(nil)[0].Uint()) // the tag enums are bytes
				for len(members) <= tag {
					members = append(members, nil)
				}
				members[tag] = schemaTable(mt, done)
			}
			vt.Fields = append(vt.Fields, fbverify.UnionType(name+"_type"), fbverify.Union(name, members...))
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Pointer:
			vt.Fields = append(vt.Fields, fbverify.TableVector(name, schemaTable(ft.Elem().Elem(), done)))
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8 && !numbers:
			vt.Fields = append(vt.Fields, fbverify.Bytes(name))
		case ft.Kind() == reflect.Slice:
			vt.Fields = append(vt.Fields, fbverify.Vector(name, uint32(ft.Elem().Size())))
		default:
			vt.Fields = append(vt.Fields, fbverify.Scalar(name, uint32(ft.Size())))
		}
	}
	return vt
}

// verifyProgramBuffer verifies buf as a Program flatbuffer. The caller has
// checked the identifier; buf starts at file offset 0. A failure is a
// *FormatError with Code CodeInvalidProgram, as Program::load reports a
// verifier failure; warnings stay in the returned verifier's Warnings.
func verifyProgramBuffer(buf []byte) (*fbverify.Verifier, error) {
	v, err := fbverify.Verify(buf, fbProgram)
	if e, ok := errors.AsType[*fbverify.Error](err); ok {
		return nil, &FormatError{Off: e.Off, Path: e.Path, Msg: e.Msg, Code: CodeInvalidProgram}
	} else if err != nil {
		return nil, err
	}
	return v, nil
}
