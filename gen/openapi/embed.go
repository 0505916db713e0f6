// Package openapi embeds the OpenAPI 3.0.3 description generated from proto/ by
// protoc-gen-openapi, so the server can publish it at /openapi.yaml.
package openapi

import _ "embed"

// YAML is gen/openapi/openapi.yaml as generated.
//
//go:embed openapi.yaml
var YAML []byte
