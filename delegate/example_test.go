package delegate_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ptekit/ptekit/delegate"
)

func ExampleEncode() {
	m := &delegate.Metadata{
		IOBindings: []delegate.Binding{{Name: "tokens", IsInput: true}, {Name: "logits"}},
		DeviceID:   0,
	}
	engine := strings.NewReader("serialized TensorRT engine")
	var blob bytes.Buffer
	n, err := delegate.Encode(&blob, m, engine, engine.Size())
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := delegate.Decode(bytes.NewReader(blob.Bytes()), n)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.Header.MagicString(), b.Metadata.Inputs(), b.Metadata.Outputs(), b.Header.EngineOffset, b.Engine().Size())
	// Output: TR01 [tokens] [logits] 272 26
}

func ExampleCheck() {
	// Upstream's writer escapes non-ASCII names, which the deployed C++
	// reader does not decode.
	m := &delegate.Metadata{IOBindings: []delegate.Binding{{Name: "café", IsInput: true}, {Name: "out"}}}
	var blob bytes.Buffer
	opts := &delegate.EncodeOptions{UpstreamCompatible: true}
	n, err := opts.Encode(&blob, m, strings.NewReader("ENG"), 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := delegate.Check(bytes.NewReader(blob.Bytes()), n)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", rep.Deployed.Inputs)
	for _, h := range rep.Hazards {
		fmt.Println(h.Kind, "-", h)
	}
	// Output:
	// ["cafu00e9"]
	// inputs - inputs differ: the metadata says ["café"], the deployed reader sees ["cafu00e9"] (input 0 "café" is read as "cafu00e9")
}

func ExampleCheckNames() {
	m := &delegate.Metadata{IOBindings: []delegate.Binding{{Name: "", IsInput: true}, {Name: "a\tb"}}}
	fmt.Println(delegate.CheckNames(m))
	// Output:
	// trt metadata: io_bindings[0].name "": empty: the deployed C++ reader drops a binding with an empty name
	// trt metadata: io_bindings[1].name "a\tb": contains control character U+0009, which JSON can only carry as an escape and the deployed C++ reader does not decode escapes
}
