//go:build tools

// Names the binary this module builds, so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
