// Command openapi-fold rewrites the OpenAPI document protoc-gen-openapi
// wrote, folding the keys it wrote twice; `make generate` runs it on
// gen/openapi/openapi.yaml.
//
// gnostic merges an `openapi.v3.operation` annotation into the operation it
// derives from a method with proto.Merge, which appends to lists: a
// response the annotation gives for a status code the method already has
// ("200", "default") comes out as a second key of the same name, which no
// YAML reader takes. The annotations use exactly that to add what gnostic
// cannot derive (the headers of a method's answer, the JSON body of a
// delete answering google.protobuf.Empty), and this step folds each
// repeated key into its first occurrence: mappings are merged key by key,
// recursively, and anything else takes the later value unless it is empty,
// as an annotation overrides what gnostic derived. A document without repeated keys comes
// out byte for byte as it went in, so the step changes nothing but what the
// annotations ask for.
package main

import (
	"bytes"
	"fmt"
	"os"

	yaml "go.yaml.in/yaml/v3"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi-fold FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-fold:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := fold(in)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(in, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// fold returns doc with every key repeated in a mapping folded into its
// first occurrence, written as protoc-gen-openapi writes (yaml.Marshal of
// the document node).
func fold(doc []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if root.Kind != yaml.DocumentNode {
		return nil, fmt.Errorf("parse: not a YAML document")
	}
	foldNode(&root)
	return yaml.Marshal(&root)
}

// foldNode folds the repeated keys of every mapping under n.
func foldNode(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		foldMapping(n)
	}
	for _, c := range n.Content {
		foldNode(c)
	}
}

// foldMapping merges the later occurrences of a repeated key of m into
// the first one and drops them, keeping the keys' first order.
func foldMapping(m *yaml.Node) {
	first := map[string]int{} // key -> index of its value in m.Content
	kept := m.Content[:0:0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if j, ok := first[k.Value]; ok && k.Kind == yaml.ScalarNode {
			kept[j] = merge(kept[j], v)
			continue
		}
		if k.Kind == yaml.ScalarNode {
			first[k.Value] = len(kept) + 1
		}
		kept = append(kept, k, v)
	}
	m.Content = kept
}

// merge returns dst with src merged in, as proto.Merge would have merged
// the annotation into the derived message: two mappings key by key (src's
// values folded into dst's, src's new keys after dst's); an empty string
// keeps dst, as proto3's zero value is no value (gnostic writes a
// response's description even when the annotation leaves it out);
// anything else is src.
func merge(dst, src *yaml.Node) *yaml.Node {
	if src.Kind == yaml.ScalarNode && src.Tag == "!!str" && src.Value == "" {
		return dst
	}
	if dst.Kind != yaml.MappingNode || src.Kind != yaml.MappingNode {
		return src
	}
	if len(dst.Content) == 0 {
		// gnostic writes an empty map as {}; the merged one is written as
		// its content asks.
		dst.Style = src.Style
	}
	dst.Content = append(dst.Content, src.Content...)
	foldMapping(dst)
	return dst
}
