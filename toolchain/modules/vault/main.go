// Vault's own main.go (github.com/hashicorp/vault v1.21.2): its module cannot be built as the main
// module from the proxy's zip (it replaces api and sdk by ./ paths the zip lacks), so this one
// requires their released versions and runs the same command.
package main

import (
	"os"

	"github.com/hashicorp/vault/command"
)

func main() {
	os.Exit(command.Run(os.Args[1:]))
}
