package main
import (
 _ "github.com/tetratelabs/wazero"
 _ "github.com/knadh/koanf/v2"
 _ "github.com/knadh/koanf/parsers/yaml"
 _ "github.com/knadh/koanf/parsers/toml/v2"
 _ "github.com/knadh/koanf/parsers/json"
 _ "github.com/knadh/koanf/providers/file"
 _ "github.com/stretchr/testify/require"
 _ "github.com/dop251/goja"
 _ "github.com/getkin/kin-openapi/openapi3"
)
func main(){}
