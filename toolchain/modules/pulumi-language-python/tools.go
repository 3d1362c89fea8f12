//go:build tools

// Names the binary this module builds, so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python"
