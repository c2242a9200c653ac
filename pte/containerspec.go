package pte

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ContainerFormat names the syntax a container_meta_type string is written in.
type ContainerFormat uint8

// The three forms seen in real programs.
const (
	// ContainerEmpty is the empty string (constant-getter methods).
	ContainerEmpty ContainerFormat = iota
	// ContainerCompact is ExecuTorch's C++ pytree form, e.g. "T2#1#0(T1#1($),D0())".
	ContainerCompact
	// ContainerTorchJSON is torch.utils._pytree's JSON form, e.g. `[1, {"type": ...}]`.
	ContainerTorchJSON
)

// String returns "empty", "compact" or "torch-json".
func (f ContainerFormat) String() string {
	switch f {
	case ContainerEmpty:
		return "empty"
	case ContainerCompact:
		return "compact"
	case ContainerTorchJSON:
		return "torch-json"
	}
	return "ContainerFormat(" + strconv.Itoa(int(f)) + ")"
}

// ContainerKind is the kind of a node of a pytree spec.
type ContainerKind uint8

// Node kinds. Torch JSON type names map to the first four where they can
// (builtins.tuple, builtins.list, collections.namedtuple, builtins.dict and
// collections.OrderedDict); any other type name is ContainerCustom.
const (
	ContainerLeaf       ContainerKind = iota // one flat value
	ContainerTuple                           // a tuple
	ContainerList                            // a list
	ContainerNamedTuple                      // a named tuple
	ContainerDict                            // a dict; Keys name the children
	ContainerCustom                          // a registered custom node; TypeName names it
)

var containerKindNames = [...]string{"leaf", "tuple", "list", "namedtuple", "dict", "custom"}

// String returns the kind's lower-case name, e.g. "tuple".
func (k ContainerKind) String() string {
	if int(k) < len(containerKindNames) {
		return containerKindNames[k]
	}
	return "ContainerKind(" + strconv.Itoa(int(k)) + ")"
}

// ContainerSpec is one node of a parsed pytree spec: how a method's flat list
// of inputs or outputs nests into the caller's tuples, lists and dicts.
type ContainerSpec struct {
	// Kind says what the node is: a leaf (one flat value) or a container.
	Kind ContainerKind
	// TypeName is the torch type name (torch JSON form) or the custom type
	// name (compact form); empty otherwise.
	TypeName string
	// Keys holds the dict keys, one per child, when the spec states them.
	Keys []string
	// Children are the nested specs; a leaf has none.
	Children []*ContainerSpec
}

// maxContainerDepth bounds recursion on hostile strings. Real specs are a
// few levels deep; ExecuTorch's own parser stops at 8.
const maxContainerDepth = 256

// Leaves returns the number of leaves (flat values) the spec describes.
func (c *ContainerSpec) Leaves() int {
	if c.Kind == ContainerLeaf {
		return 1
	}
	n := 0
	for _, ch := range c.Children {
		n += ch.Leaves()
	}
	return n
}

// String renders the spec in Python-like notation with * for each leaf:
// "((*, *), {})", "[*, *]", "{'a': *}", "Point(*, *)".
func (c *ContainerSpec) String() string {
	var b strings.Builder
	c.render(&b)
	return b.String()
}

func (c *ContainerSpec) render(b *strings.Builder) {
	children := func(open, close string, keyed bool) {
		b.WriteString(open)
		for i, ch := range c.Children {
			if i > 0 {
				b.WriteString(", ")
			}
			if keyed && i < len(c.Keys) {
				b.WriteString(strconv.Quote(c.Keys[i]))
				b.WriteString(": ")
			}
			ch.render(b)
		}
		if c.Kind == ContainerTuple && len(c.Children) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	}
	switch c.Kind {
	case ContainerLeaf:
		b.WriteString("*")
	case ContainerTuple:
		children("(", ")", false)
	case ContainerList:
		children("[", "]", false)
	case ContainerDict:
		children("{", "}", true)
	default:
		name := c.TypeName
		if name == "" {
			name = c.Kind.String()
		}
		children(name+"(", ")", false)
	}
}

// ParseContainerSpec parses a container_meta_type string in any of the three
// forms real programs use. The Program keeps these strings verbatim; a string
// this function cannot parse is not an error for reading or writing a file.
// An empty string returns a nil spec and ContainerEmpty.
func ParseContainerSpec(s string) (*ContainerSpec, ContainerFormat, error) {
	if s == "" {
		return nil, ContainerEmpty, nil
	}
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "[") {
		spec, err := parseTorchSpec(s)
		return spec, ContainerTorchJSON, err
	}
	p := compactParser{s: s}
	spec, err := p.spec(0)
	if err == nil && p.pos != len(s) {
		err = p.errorf("unexpected %q after the spec", s[p.pos:])
	}
	if err != nil {
		return nil, ContainerCompact, err
	}
	return spec, ContainerCompact, nil
}

// compactParser reads ExecuTorch's C++ pytree form:
//
//	spec := '$' | kind n ('#' leaves){n} '(' children ')'
//	kind := 'T' | 'L' | 'N' | 'D' | 'C(' name ')'
//
// where dict children are written key ':' spec and a key is digits or a
// single-quoted string.
type compactParser struct {
	s   string
	pos int
}

func (p *compactParser) errorf(format string, a ...any) error {
	return fmt.Errorf("pte: container spec at character %d: %s", p.pos, fmt.Sprintf(format, a...))
}

func (p *compactParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *compactParser) expect(c byte) error {
	if p.peek() != c {
		if p.pos >= len(p.s) {
			return p.errorf("want %q, found the end", c)
		}
		return p.errorf("want %q, found %q", c, p.s[p.pos])
	}
	p.pos++
	return nil
}

func (p *compactParser) number() (int, error) {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	if start == p.pos {
		return 0, p.errorf("want a number")
	}
	n, err := strconv.Atoi(p.s[start:p.pos])
	if err != nil || n > len(p.s) {
		return 0, p.errorf("count %s is out of range", p.s[start:p.pos])
	}
	return n, nil
}

// spec parses one node: its kind (and a custom node's type name), the
// leaf count of each child, then the children.
func (p *compactParser) spec(depth int) (*ContainerSpec, error) {
	if depth > maxContainerDepth {
		return nil, p.errorf("nested deeper than %d levels", maxContainerDepth)
	}
	node, err := p.node()
	if err != nil || node.Kind == ContainerLeaf {
		return node, err
	}
	n, err := p.number()
	if err != nil {
		return nil, err
	}
	leaves := make([]int, 0, min(n, 64))
	for range n {
		if err := p.expect('#'); err != nil {
			return nil, err
		}
		l, err := p.number()
		if err != nil {
			return nil, err
		}
		leaves = append(leaves, l)
	}
	if err := p.children(node, leaves, depth); err != nil {
		return nil, err
	}
	return node, nil
}

// node parses a node's kind and, for a custom node, its type name.
func (p *compactParser) node() (*ContainerSpec, error) {
	node := &ContainerSpec{}
	switch c := p.peek(); c {
	case '$':
		p.pos++
		return &ContainerSpec{Kind: ContainerLeaf}, nil
	case 'T':
		node.Kind = ContainerTuple
	case 'L':
		node.Kind = ContainerList
	case 'N':
		node.Kind = ContainerNamedTuple
	case 'D':
		node.Kind = ContainerDict
	case 'C':
		node.Kind = ContainerCustom
	case 0:
		return nil, p.errorf("want a spec, found the end")
	default:
		return nil, p.errorf("unknown node kind %q", c)
	}
	p.pos++
	if node.Kind == ContainerCustom {
		if err := p.expect('('); err != nil {
			return nil, err
		}
		end := strings.IndexByte(p.s[p.pos:], ')')
		if end < 0 {
			return nil, p.errorf("unterminated custom type name")
		}
		node.TypeName = p.s[p.pos : p.pos+end]
		p.pos += end + 1
	}
	return node, nil
}

// children parses the parenthesised children of node (keyed for a dict),
// each of which must have the leaf count the header gave it.
func (p *compactParser) children(node *ContainerSpec, leaves []int, depth int) error {
	if err := p.expect('('); err != nil {
		return err
	}
	for i := range leaves {
		if i > 0 {
			if err := p.expect(','); err != nil {
				return err
			}
		}
		if node.Kind == ContainerDict {
			key, err := p.key()
			if err != nil {
				return err
			}
			node.Keys = append(node.Keys, key)
			if err := p.expect(':'); err != nil {
				return err
			}
		}
		child, err := p.spec(depth + 1)
		if err != nil {
			return err
		}
		if got := child.Leaves(); got != leaves[i] {
			return p.errorf("child %d has %d leaves, the header says %d", i, got, leaves[i])
		}
		node.Children = append(node.Children, child)
	}
	return p.expect(')')
}

func (p *compactParser) key() (string, error) {
	if p.peek() == '\'' {
		p.pos++
		end := strings.IndexByte(p.s[p.pos:], '\'')
		if end < 0 {
			return "", p.errorf("unterminated dict key")
		}
		k := p.s[p.pos : p.pos+end]
		p.pos += end + 1
		return k, nil
	}
	start := p.pos
	if _, err := p.number(); err != nil {
		return "", p.errorf("want a dict key (digits or a quoted string)")
	}
	return p.s[start:p.pos], nil
}

// torchNode is one node of torch's JSON treespec.
type torchNode struct {
	// Type is the node's type name; null for a leaf.
	Type *string `json:"type"`
	// Context is the node's context, itself JSON (dict keys), or null.
	Context *string `json:"context"`
	// Children are the nested nodes.
	Children []*torchNode `json:"children_spec"`
}

func parseTorchSpec(s string) (*ContainerSpec, error) {
	var top []json.RawMessage
	if err := json.Unmarshal([]byte(s), &top); err != nil {
		return nil, fmt.Errorf("pte: container spec: %v", err)
	}
	if len(top) != 2 {
		return nil, fmt.Errorf("pte: container spec: want [protocol, tree], found %d elements", len(top))
	}
	var protocol int
	if err := json.Unmarshal(top[0], &protocol); err != nil || protocol != 1 {
		return nil, fmt.Errorf("pte: container spec: unsupported protocol %s", top[0])
	}
	var root torchNode
	if err := json.Unmarshal(top[1], &root); err != nil {
		return nil, fmt.Errorf("pte: container spec: %v", err)
	}
	return convertTorchNode(&root, 0)
}

func convertTorchNode(n *torchNode, depth int) (*ContainerSpec, error) {
	if depth > maxContainerDepth {
		return nil, fmt.Errorf("pte: container spec: nested deeper than %d levels", maxContainerDepth)
	}
	if n == nil {
		return nil, fmt.Errorf("pte: container spec: null node")
	}
	if n.Type == nil {
		if len(n.Children) != 0 {
			return nil, fmt.Errorf("pte: container spec: a leaf has %d children", len(n.Children))
		}
		return &ContainerSpec{Kind: ContainerLeaf}, nil
	}
	spec := &ContainerSpec{TypeName: *n.Type}
	switch *n.Type {
	case "builtins.tuple":
		spec.Kind = ContainerTuple
	case "builtins.list":
		spec.Kind = ContainerList
	case "collections.namedtuple":
		spec.Kind = ContainerNamedTuple
	case "builtins.dict", "collections.OrderedDict", "collections.defaultdict":
		spec.Kind = ContainerDict
	default:
		spec.Kind = ContainerCustom
	}
	if spec.Kind == ContainerDict && n.Context != nil {
		// The context is itself JSON: the list of keys. Keys that are not
		// strings are kept in their JSON spelling.
		var keys []json.RawMessage
		if err := json.Unmarshal([]byte(*n.Context), &keys); err == nil && len(keys) == len(n.Children) {
			for _, k := range keys {
				var str string
				if json.Unmarshal(k, &str) == nil {
					spec.Keys = append(spec.Keys, str)
				} else {
					spec.Keys = append(spec.Keys, string(k))
				}
			}
		}
	}
	for _, ch := range n.Children {
		c, err := convertTorchNode(ch, depth+1)
		if err != nil {
			return nil, err
		}
		spec.Children = append(spec.Children, c)
	}
	return spec, nil
}
