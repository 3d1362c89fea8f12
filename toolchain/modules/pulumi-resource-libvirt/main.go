// pulumi-resource-libvirt: terraform-provider-libvirt under pulumi-terraform-bridge, with the
// resource tokens of pulumi-libvirt 0.5.4 (libvirt:index/<lowerCamel>:<Name>). The proxy refuses
// pulumi-libvirt's own provider module, so this main replaces it (toolchain/pins.toml says why).
// Property names are the bridge's defaults, as pulumi-libvirt's are.
package main

import (
	"strings"

	"github.com/dmacvicar/terraform-provider-libvirt/libvirt"
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	shim "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim/sdk-v2"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// Set at build time (-X main.version=...): the version the Python SDK asks the engine for.
var version string

func resource(name string) *tfbridge.ResourceInfo {
	return &tfbridge.ResourceInfo{Tok: tokens.Type("libvirt:index/" + strings.ToLower(name[:1]) + name[1:] + ":" + name)}
}

func main() {
	if version == "" {
		panic("built without -X main.version")
	}
	info := tfbridge.ProviderInfo{
		P:       shim.NewProvider(libvirt.Provider()),
		Name:    "libvirt",
		Version: version,
		Config: map[string]*tfbridge.SchemaInfo{
			"uri": {Default: &tfbridge.DefaultInfo{EnvVars: []string{"LIBVIRT_DEFAULT_URI"}}},
		},
		Resources: map[string]*tfbridge.ResourceInfo{
			"libvirt_cloudinit_disk": resource("CloudInitDisk"),
			"libvirt_combustion":     resource("Combustion"),
			"libvirt_domain":         resource("Domain"),
			"libvirt_ignition":       resource("Ignition"),
			"libvirt_network":        resource("Network"),
			"libvirt_pool":           resource("Pool"),
			"libvirt_volume":         resource("Volume"),
		},
	}
	// The schema only answers `pulumi package get-schema`; a program's runs never ask for it.
	tfbridge.Main("libvirt", version, info, []byte(`{"name":"libvirt","version":"`+version+`"}`))
}
